"""Recorded workflow histories of `harness.run`: how they are recorded, and replayed.

The replay test (test_replay.py) replays every history in tests/fixtures/temporal/ with
Temporal's `Replayer` against the current workflow code: a change of that code that would
break the runs in flight when it is deployed (other activities, in another order, another
timer, a signal handled otherwise) fails it with a `NondeterminismError`.

Record new histories with

    .venv/bin/python tests/distributed/histories.py [--address HOST:PORT] [--tag TAG] [--only S]

which starts a Temporal dev server of its own (unless --address names one), runs each
scenario below with a worker in this process, and writes SCENARIO-TAG.json (TAG: today's
date) next to the others. Keep the old files: they are the runs in flight of past
versions. A change of the workflow that is meant to change what runs do goes behind
`workflow.patched(...)` so that the old histories still replay; then record new ones.
"""

import argparse
import asyncio
import datetime
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

from temporal_support import free_port
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from harness import Harness
from harness.core import RunEvent
from harness.core.states import RunState
from harness.distributed.temporal.client import connect
from harness.distributed.temporal.devserver import DevServer, DevServerConfig
from harness.distributed.temporal.worker import hosted
from harness.distributed.temporal.workflow import RunWorkflow
from harness.runtime import Settings
from harness.runtime._temporal import TemporalHost
from harness.runtime.runtime_settings import RuntimeSettings

sys.path.insert(0, str(Path(__file__).parent / "processes"))
from history_agent import LISTENER, LONG, LOOKUPS, NAME, SUPERVISOR, TRIAGE, recorded_agents

FIXTURES = Path(__file__).parents[1] / "fixtures" / "temporal"


async def replay(history: Path, home: Path) -> None:
    """Replay one recorded history against the current workflow code.

    Raises:
        NondeterminismError: The code no longer does what the history recorded.
    """
    recorded = WorkflowHistory.from_json(history.stem, history.read_text(encoding="utf-8"))
    async with Harness(Settings(home=home), agents=recorded_agents(), execute=False) as h:
        host = TemporalHost(h.store, h._agents, h._resources, h.bus)
        with hosted(None, host):  # the Replayer's workflows find the agent here
            await Replayer(workflows=[RunWorkflow]).replay_workflow(recorded)


# -- recording -------------------------------------------------------------------------------


async def _until(h: Harness, run_id: str, done: Callable[[list[RunEvent]], bool]) -> None:
    async with asyncio.timeout(60):
        while not done(list(await h.store.events(run_id))):
            await asyncio.sleep(0.05)


def _has(kind: str, count: int = 1) -> Callable[[list[RunEvent]], bool]:
    return lambda events: sum(e.type == kind for e in events) >= count


async def _state(h: Harness, run_id: str, state: RunState) -> None:
    async with asyncio.timeout(60):
        while (await h.get(run_id)).state != state:
            await asyncio.sleep(0.05)


async def approve_pause_resume(h: Harness, gate: asyncio.Event) -> str:
    """Tools, a pause at a step boundary, a pause while a call waits for approval, approval."""
    run_id = await h.submit(NAME, "tides")
    await _until(h, run_id, _has("model_called"))  # the first model turn is held at the gate
    await h.pause(run_id)
    gate.set()
    await _state(h, run_id, RunState.PAUSED)  # after the lookup, at the step's end
    await h.resume(run_id)
    await _state(h, run_id, RunState.WAITING_TOOL)  # publish asks for approval
    await h.pause(run_id)
    await _state(h, run_id, RunState.PAUSED)
    await h.resume(run_id)
    await _until(h, run_id, _has("approval_requested", 2))  # asked again
    await _state(h, run_id, RunState.WAITING_TOOL)
    (asked,) = await h.pending_approvals(run_id)
    await h.approve(run_id, asked["call_id"], by="user:recorder")
    result = await h.wait(run_id, timeout=60)
    assert result.output == "published about tides", result
    return run_id


async def cancel_in_flight(h: Harness, gate: asyncio.Event) -> str:
    """A cancel while a tool call runs: the call is stopped, the run ends cancelled."""
    gate.set()
    run_id = await h.submit(NAME, "wait")
    await _until(h, run_id, _has("tool_started"))
    await h.cancel(run_id, reason="recorded cancel", by="user:recorder")
    result = await h.wait(run_id, timeout=60)
    assert result.termination == "cancelled", result
    return run_id


async def handoff(h: Harness, gate: asyncio.Event) -> str:
    """Triage hands the conversation over to billing, which looks up and answers."""
    run_id = await h.submit(TRIAGE, "I was charged twice")
    result = await h.wait(run_id, timeout=60)
    assert result.output == "the charge is refunded", result
    return run_id


async def children(h: Harness, gate: asyncio.Event) -> str:
    """A supervisor calls its researcher agent twice at once: two child workflows."""
    run_id = await h.submit(SUPERVISOR, "survey")
    result = await h.wait(run_id, timeout=60)
    assert result.output == "found topic 0 | found topic 1", result
    return run_id


async def message(h: Harness, gate: asyncio.Event) -> str:
    """A run waits for a message (a workflow timer) and is woken by `Harness.send`."""
    run_id = await h.submit(LISTENER, "listen")
    await _until(h, run_id, _has("run_waiting"))
    await h.send(run_id, "the build is green", sender="recorder")
    result = await h.wait(run_id, timeout=60)
    assert result.output == "heard: [message from recorder]: the build is green", result
    return run_id


async def renew(h: Harness, gate: asyncio.Event) -> str:
    """A long run whose history is renewed (continued as new) on the way."""
    run_id = await h.submit(LONG, "look it all up")
    result = await h.wait(run_id, timeout=60)
    assert result.output == f"looked up {LOOKUPS} parts", result
    return run_id


SCENARIOS = {
    "approve-pause-resume": approve_pause_resume,
    "cancel-in-flight": cancel_in_flight,
    "handoff": handoff,
    "children": children,
    "message": message,
    "renew": renew,
}

HISTORY_EVENTS = {"renew": 100}
"""`temporal_history_events` of the scenarios that set it (others keep the default)."""


async def record(address: str, tag: str, home: Path, only: list[str] | None = None) -> list[Path]:
    """Run the scenarios (`only` those) on the server at `address`; write and replay their
    histories."""
    client: Client = await connect(address)
    written: list[Path] = []
    for name, scenario in SCENARIOS.items():
        if only and name not in only:
            continue
        gate = asyncio.Event()
        queue = f"record-{uuid.uuid4().hex[:8]}"
        runtime = RuntimeSettings(
            backend="temporal",
            temporal_address=address,
            task_queue=queue,
            temporal_history_events=HISTORY_EVENTS.get(name, 10_000),
        )
        settings = Settings(home=home / name, runtime=runtime)
        async with Harness(settings, agents=recorded_agents(gate)) as h:
            run_id = await scenario(h, gate)
            handle = client.get_workflow_handle(run_id)
            await handle.result()  # the workflow's end, after the run's end in the store
        for index, history in enumerate(await _executions(client, run_id)):
            suffix = f"-{index + 1}" if index else ""
            path = FIXTURES / f"{name}-{tag}{suffix}.json"
            path.write_text(history.to_json() + "\n", encoding="utf-8")
            await replay(path, home / f"{name}-replay{suffix}")
            written.append(path)
    return written


async def _executions(client: Client, run_id: str) -> list[WorkflowHistory]:
    """The histories of the run's workflow executions, first to last (more than one when
    it continued as new)."""
    histories: list[WorkflowHistory] = []
    execution: str | None = None
    while True:
        history = await client.get_workflow_handle(run_id, run_id=execution).fetch_history()
        histories.append(history)
        started = history.events[0].workflow_execution_started_event_attributes
        execution = started.continued_execution_run_id or None
        if execution is None:
            return histories[::-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", help="a running Temporal server (default: start one)")
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    parser.add_argument("--tag", default=today, help="the files' suffix (default: today)")
    parser.add_argument(
        "--only", action="append", choices=sorted(SCENARIOS), help="record this scenario only"
    )
    args = parser.parse_args()
    FIXTURES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="harness-histories-") as directory:
        home = Path(directory)
        if args.address:
            written = asyncio.run(record(args.address, args.tag, home, args.only))
        else:
            config = DevServerConfig(db_filename=home / "temporal.db", port=free_port())
            with DevServer(config) as server:
                written = asyncio.run(record(server.address, args.tag, home, args.only))
    for path in written:
        print(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)


if __name__ == "__main__":
    main()
