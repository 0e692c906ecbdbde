"""Spans built and exported by a child process: the harness only writes text to a pipe.

Building a run's spans, the SDK's `ReadableSpan`s, batching them and encoding OTLP protobuf
cost more than the run they describe, and would hold the GIL the event loop needs. So when
traces go to OTLP, `ProcessExport` starts `python -m harness.observability.export_process`
with the same environment (its `OTEL_*` variables configure the exporter there) and writes
to its stdin one JSON text a line:

- an event, as the store wrote it (`{"v": ...}`; sent by `harness.observability.forward`):
  the child feeds it to its run's `TraceBuilder` and exports the spans it finishes;
- `["config", capture_content, providers]`: how the child's builders read events;
- `["begin", run_id, trace_id, span_id, parent_span_id, first_seq]`: follow a run, whose
  events before `first_seq` (an earlier process exported their spans) are fed without
  exporting what they finish;
- `["spans", trace_id, span_id, parent_span_id, run_id, records]`: spans built elsewhere
  (`export`, `export_records`), exported as they are.

The lines are queued as text and joined into one write up to `flush_s` later: one write for
all the runs of that moment. At most `_BATCH` lines wait (in a burst they are joined as soon
as that many are queued).

Writes never block the event loop: the pipe is non-blocking, what it cannot take waits
in a bounded buffer drained when the pipe is writable, and past the bound lines are
dropped and counted. The child exports what it was sent and exits when its stdin ends,
whether the harness closed it or died (even by SIGKILL). A child that dies is logged;
runs never fail because of tracing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, Final, cast

from harness.core.codec import pack, unpack
from harness.observability._otlp import SpanEncoder
from harness.observability.context import TraceContext
from harness.observability.live import SpanExport
from harness.observability.spans import SpanData, SpanRecord

if TYPE_CHECKING:
    from harness.observability.otel import RequestExport

__all__ = ["ProcessExport", "main"]

_log = logging.getLogger(__name__)
_QUEUE: Final = 16_384
"""The child's `OTEL_BSP_MAX_QUEUE_SIZE` unless set: spans waiting for a batch."""
_EAGER: Final = 64 << 10
"""Buffered bytes written at once, without waiting for the timer (a pipe's capacity)."""
_READ: Final = 1 << 20
"""Bytes the child reads from its pipe at once."""
_BATCH: Final = 512
"""Queued lines joined into the buffer at once, without waiting for the timer."""
_LOGGED: Final = 10
"""Unreadable lines the child logs one by one; past it, it counts them and logs the total."""
_MAX_RUNS: Final = 10_000
"""Runs the child follows at once; past it the oldest is forgotten (as `LiveTraces`)."""


class ProcessExport(SpanExport):
    """Hands spans, or the events to build them from, to a child process that exports them.

    See the module. `harness.observability.forward.ForwardedTraces` sends it events;
    `LiveTraces` (or anyone) may hand it finished spans as any `SpanExport`.

    Args:
        kind: The exporter (`otlp`, `console`); from `OTEL_TRACES_EXPORTER` when omitted.
        max_buffer: Bytes held while the child is behind; past it lines are dropped (and
            counted in `dropped`).
        close_timeout: Seconds `shutdown` waits for the child to export and exit.
        flush_s: Lines are written at most this long after they are queued, many at once
            (a write to a pipe costs more than what a run sends).
    """

    def __init__(
        self,
        kind: str | None = None,
        *,
        max_buffer: int = 8 << 20,
        close_timeout: float = 30.0,
        flush_s: float = 0.05,
    ) -> None:
        from harness.observability.otel import current_context, exporter_name

        exporter_name(kind)  # a configuration mistake fails here, not in the child
        self._caller = current_context
        self._max_buffer = max_buffer
        self._close_timeout = close_timeout
        self._flush_s = flush_s
        self._timer: asyncio.TimerHandle | None = None
        self.child = subprocess.Popen(
            [sys.executable, "-m", __name__, *([kind] if kind else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C of the harness does not cut its flush short
        )
        """The exporting process."""
        assert self.child.stdin is not None
        self._fd = self.child.stdin.fileno()
        os.set_blocking(self._fd, False)
        self._queued: list[str] = []  # lines not joined yet
        # Joined lines not yet written, each with its count of lines, kept as they were
        # joined (a chunk written in part is not copied: `_head` bytes of it went).
        self._chunks: deque[tuple[bytes, int]] = deque()
        self._head = 0
        self._pending = 0  # bytes in `_chunks` not yet written
        self._lock = threading.Lock()
        self._watching: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._dead = False
        self.dropped = 0
        """Lines dropped (a run's spans, or one event): the child was too far behind, or gone."""

    def export(self, context: TraceContext, run_id: str, spans: Sequence[SpanData]) -> None:
        """Queue the spans for the child's pipe; written within `flush_s`, never blocking."""
        self.export_records(context, run_id, [_record(span) for span in spans])

    def export_records(
        self, context: TraceContext, run_id: str, records: Sequence[SpanRecord]
    ) -> None:
        """Queue the spans as they are; written within `flush_s`, never blocking."""
        ids = (context.trace_id, context.span_id, context.parent_span_id, run_id)
        self._send((pack(("spans", *ids, records)).decode(),))

    def configure(self, *, capture_content: bool, providers: Mapping[str, str] | None) -> None:
        """How the child's builders read the events sent on (see `TraceBuilder`)."""
        self._send((pack(("config", capture_content, dict(providers or {}))).decode(),))

    def begin(
        self, run_id: str, context: TraceContext, first_seq: int, stored: Sequence[str] = ()
    ) -> None:
        """Have the child follow run `run_id`, then queue its events `stored` (see `events`).

        Its spans are exported from its event `first_seq` on: the events before it (sent
        first, in order) only bring the child's builder up to date, the spans they finish
        were an earlier process's to export.
        """
        ids = (context.trace_id, context.span_id, context.parent_span_id)
        self._send([pack(("begin", run_id, *ids, first_seq)).decode(), *stored])

    def events(self, stored: Sequence[str]) -> None:
        """Queue events of runs the child follows, each its stored JSON, in order."""
        self._send(stored)

    def _send(self, lines: Sequence[str]) -> None:
        with self._lock:
            if self._closed or self._dead:
                self.dropped += len(lines)
                return
            queued = self._queued
            queued += lines
            if len(queued) >= _BATCH:
                self._pack()
            if self._timer is None and self._watching is None:
                self._due_soon()

    def _due_soon(self) -> None:
        """Make sure a write comes: now, or within `flush_s` (the lock is held)."""
        if self._timer is not None or self._watching is not None:
            return  # a write is already due
        if self._pending < _EAGER and self._schedule():
            return
        self._write()

    def _pack(self) -> None:
        """The queued lines, joined into the buffer (the lock is held)."""
        queued = self._queued
        if not queued:
            return
        self._queued = []
        queued.append("")  # each line ends with a newline
        chunk = "\n".join(queued).encode()
        lines = len(queued) - 1
        room = self._max_buffer - self._pending
        if len(chunk) > room:  # the lines that fit go; from the first that does not, none
            cut = chunk.rfind(b"\n", 0, room + 1) + 1
            kept = chunk.count(b"\n", 0, cut)
            self._drop(lines - kept)
            chunk, lines = chunk[:cut], kept
            if not chunk:
                return
        self._pending += len(chunk)
        self._chunks.append((chunk, lines))

    def caller(self) -> TraceContext | None:
        """The caller's active OpenTelemetry span, if it is a valid one."""
        return self._caller()

    async def aclose(self) -> None:
        """Stop the timer and the watch of the pipe, then `shutdown` in a thread."""
        with self._lock:
            loop, self._watching = self._watching, None
            timer, self._timer = self._timer, None
        if loop is not None:
            loop.remove_writer(self._fd)
        if timer is not None:
            timer.cancel()
        await asyncio.to_thread(self.shutdown)

    def shutdown(self) -> None:
        """Write what is buffered, close the pipe and wait for the child to export and exit."""
        deadline = time.monotonic() + self._close_timeout
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._pack()
            while self._pending and not self._dead and time.monotonic() < deadline:
                select.select([], [self._fd], [], max(0.0, deadline - time.monotonic()))
                self._flush()
            self._discard()
        with contextlib.suppress(OSError):
            assert self.child.stdin is not None
            self.child.stdin.close()
        self._wait(deadline)

    def _wait(self, deadline: float) -> None:
        try:
            code = self.child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _log.error(
                "the trace export process (pid %d) did not finish in %.0f s: killed, "
                "its unexported spans are lost",
                self.child.pid,
                self._close_timeout,
            )
            self.child.kill()
            self.child.wait()
            return
        if code != 0 and not self._dead:
            _log.error(
                "the trace export process (pid %d) exited with code %d", self.child.pid, code
            )
        if self.dropped:
            _log.warning(
                "%d lines of spans or events were not exported (the export process was behind)",
                self.dropped,
            )

    def _flush(self) -> None:
        """Write what the pipe takes now (the lock is held)."""
        chunks = self._chunks
        try:
            while chunks:
                chunk = chunks[0][0]
                head = self._head
                written = os.write(self._fd, memoryview(chunk)[head:] if head else chunk)
                self._pending -= written
                if head + written < len(chunk):
                    self._head = head + written
                else:
                    chunks.popleft()
                    self._head = 0
        except BlockingIOError:
            return
        except OSError:
            self._gone()

    def _schedule(self) -> bool:
        """Write in `flush_s`: one write for many lines (the lock is held)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        self._timer = loop.call_later(self._flush_s, self._due)
        return True

    def _due(self) -> None:
        with self._lock:
            self._timer = None
            if not self._closed and self._watching is None:
                self._write()

    def _write(self) -> None:
        """Write what the pipe takes; watch it for the rest (the lock is held)."""
        self._pack()
        self._flush()
        if self._pending and not self._dead:
            self._watch()

    def _discard(self) -> None:
        """Drop what was not written, counting its lines (the lock is held)."""
        self.dropped += sum(lines for _, lines in self._chunks) + len(self._queued)
        self._chunks.clear()
        self._head = self._pending = 0
        self._queued = []

    def _watch(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop here: the next export or shutdown writes the rest
        loop.add_writer(self._fd, self._writable)
        self._watching = loop

    def _writable(self) -> None:
        with self._lock:
            self._pack()
            self._flush()
            if (not self._pending or self._dead) and self._watching is not None:
                self._watching.remove_writer(self._fd)
                self._watching = None

    def _drop(self, count: int) -> None:
        if not self.dropped:
            _log.warning(
                "the trace export process is behind (%d bytes waiting): dropping spans "
                "until it catches up; `dropped` counts them",
                self._pending,
            )
        self.dropped += count

    def _gone(self) -> None:
        self._dead = True
        self._discard()
        code = self.child.poll()
        _log.error(
            "the trace export process (pid %d) is gone (exit code %s): spans are no longer "
            "exported; runs go on",
            self.child.pid,
            "unknown yet" if code is None else code,
        )


def _record(span: SpanData) -> SpanRecord:
    events = [(e.name, e.ts, e.attributes) for e in span.events]
    attributes = dict(span.attributes)
    return (span.span_id, span.parent_id, span.name, span.kind, span.start, span.end,
            attributes, events, span.status, span.status_message, span.finished)  # fmt: skip


# ----- the child

_Spans = tuple[str, str, "str | None", str, Sequence[Sequence[Any]]]
"""A run's finished spans: its trace id, run span id, caller's span id, run id, the records."""


def main(argv: Sequence[str] = sys.argv[1:]) -> int:
    """The child: read lines from stdin until it ends, export their spans, flush, exit."""
    from harness.observability.otel import batch_sink, request_export

    logging.basicConfig(format="harness trace export: %(levelname)s %(message)s")
    # A burst of runs arrives faster than batches of 512 go out; the SDK's default queue
    # (2,048 spans) would drop most of it. The pipe's bound is the back-pressure here.
    os.environ.setdefault("OTEL_BSP_MAX_QUEUE_SIZE", str(_QUEUE))
    kind = argv[0] if argv else None
    direct = request_export(kind)
    spans = _Builders().spans(_lines(sys.stdin.buffer))
    if direct is not None:
        _encode_and_send(spans, direct)
        return 0
    sink = batch_sink(kind)
    try:
        for trace_id, span_id, parent_span_id, run_id, records in spans:
            context = TraceContext(
                trace_id=trace_id, span_id=span_id, parent_span_id=parent_span_id
            )
            sink.add_records(context, run_id, records)
    finally:
        sink.shutdown()
    return 0


def _lines(stdin: BinaryIO) -> Iterator[bytes]:
    """The lines, until stdin ends (a last line without its newline is cut short: dropped).

    What the pipe holds is read at once (up to `_READ` bytes) and cut into lines: one
    system call for all the lines the harness wrote together.
    """
    fd = stdin.fileno()
    rest = b""
    while chunk := os.read(fd, _READ):
        lines = (rest + chunk if rest else chunk).split(b"\n")
        rest = lines.pop()
        yield from lines


class _Builders:
    """The child's builders: a run's events in, its finished spans out (see the module)."""

    def __init__(self) -> None:
        from harness.observability.spans import TraceBuilder

        self._builder = TraceBuilder
        self._capture = False
        self._providers: Mapping[str, str] | None = None
        # run id -> (builder, trace id, run span id, caller's span id, first exported seq)
        self._runs: dict[str, tuple[Any, str, str, str | None, int]] = {}
        self.skipped = 0
        """Lines that could not be read (logged, the first `_LOGGED` of them)."""

    def spans(self, lines: Iterator[bytes]) -> Iterator[_Spans]:
        """The finished spans of each line that finishes any, in order."""
        from harness.core.codec import event_from_dict
        from harness.core.events import RunPaused

        runs = self._runs
        for line in lines:
            if not line:
                continue
            try:
                data: Any = unpack(line)
                if type(data) is dict:
                    event = event_from_dict(cast("dict[str, Any]", data))
                    run = runs.get(event.run_id)
                    if run is None:
                        continue  # not followed (forgotten, or its begin was lost)
                    builder, trace_id, span_id, caller, first = run
                    records = builder.feed_records(event)
                    if event.seq < first:
                        continue  # an earlier process's: it exported what this finished
                    if builder.ended or type(event.payload) is RunPaused:
                        del runs[event.run_id]  # a resumed run is begun again
                    if records:
                        yield trace_id, span_id, caller, event.run_id, records
                elif data[0] == "spans":
                    yield data[1], data[2], data[3], data[4], data[5]
                else:
                    self._control(data)
            except Exception as exc:
                self.skipped += 1
                if self.skipped <= _LOGGED:
                    _log.error("cannot read a line of %d bytes (%s): skipped", len(line), exc)
        if self.skipped > _LOGGED:
            _log.error("%d lines in all could not be read and were skipped", self.skipped)

    def _control(self, data: list[Any]) -> None:
        if data[0] == "begin":
            _, run_id, trace_id, span_id, caller, first = data
            builder = self._builder(
                run_id, capture_content=self._capture, providers=self._providers
            )
            self._runs.pop(run_id, None)
            self._runs[run_id] = (builder, trace_id, span_id, caller, first)
            if len(self._runs) > _MAX_RUNS:
                del self._runs[next(iter(self._runs))]
        elif data[0] == "config":
            self._capture, self._providers = bool(data[1]), dict(data[2])
        else:
            raise ValueError(f"unknown line {data[0]!r}")


def _encode_and_send(spans: Iterator[_Spans], export: RequestExport) -> None:
    """OTLP without the SDK's objects: each run's spans encoded as they come, sent in batches."""
    encoder = SpanEncoder(export.resource, *export.scope)
    batches = _Batches(encoder, export)
    try:
        for trace_id, span_id, parent_span_id, run_id, records in spans:
            batches.add(
                encoder.spans(trace_id, span_id, parent_span_id, run_id, records), len(records)
            )
    finally:
        batches.close()
        export.shutdown()


class _Batches:
    """Encoded spans waiting for the sending thread, sent as the `OTEL_BSP_*` variables say.

    A batch goes when it holds `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` spans (512) or
    `OTEL_BSP_SCHEDULE_DELAY` ms (5,000) after the last one went; past
    `OTEL_BSP_MAX_QUEUE_SIZE` spans waiting, new ones are dropped (and counted, as the SDK's
    processor does). `close` sends everything left.
    """

    def __init__(self, encoder: SpanEncoder, export: RequestExport) -> None:
        self._encoder = encoder
        self._export = export
        self._size = max(1, _env_int("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512))
        self._delay_s = max(0, _env_int("OTEL_BSP_SCHEDULE_DELAY", 5000)) / 1000
        self._bound = max(1, _env_int("OTEL_BSP_MAX_QUEUE_SIZE", _QUEUE))
        self._waiting: deque[tuple[bytes, int]] = deque()
        self._count = 0
        self._closing = False
        self._dropped = 0
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="otlp-export", daemon=True)
        self._thread.start()

    def add(self, spans: bytes, count: int) -> None:
        """Queue a run's encoded spans (`count` of them)."""
        with self._ready:
            if self._count + count > self._bound:
                if not self._dropped:
                    _log.warning("the export queue is full (%d spans): dropping spans", self._bound)
                self._dropped += count
                return
            self._waiting.append((spans, count))
            self._count += count
            if self._count >= self._size:
                self._ready.notify()

    def close(self) -> None:
        """Send what is queued, stop the thread."""
        with self._ready:
            self._closing = True
            self._ready.notify()
        self._thread.join()
        if self._dropped:
            _log.warning("%d spans were dropped: the export queue was full", self._dropped)

    def _run(self) -> None:
        while True:
            with self._ready:
                if not self._closing and self._count < self._size:
                    self._ready.wait(self._delay_s)
                if self._closing and not self._waiting:
                    return
                taken, count = self._take()
            if taken:
                self._send(taken, count)

    def _take(self) -> tuple[list[bytes], int]:
        """Up to a batch's spans from the front of the queue (the lock is held)."""
        taken: list[bytes] = []
        count = 0
        waiting = self._waiting
        while waiting and count < self._size:
            spans, n = waiting.popleft()
            taken.append(spans)
            count += n
        self._count -= count
        return taken, count

    def _send(self, taken: list[bytes], count: int) -> None:
        try:
            sent = self._export.send(self._encoder.request(taken), count)
        except Exception:
            _log.exception("exporting %d spans failed", count)
            return
        if not sent:
            _log.error("exporting %d spans failed", count)


def _env_int(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    try:
        return int(text) if text else default
    except ValueError:
        _log.warning("%s=%r is not an integer: %d is used", name, text, default)
        return default


if __name__ == "__main__":
    sys.exit(main())
