"""Stop a worker process that a test started (`subprocess.Popen` with its stdout piped)."""

import signal
import subprocess


def stop(worker: subprocess.Popen[str], how: signal.Signals = signal.SIGTERM) -> None:
    """Send `how` (SIGKILL: no cleanup, its leases stay), wait for the end, close its pipe."""
    worker.send_signal(how)
    worker.wait()
    assert worker.stdout is not None
    worker.stdout.close()
