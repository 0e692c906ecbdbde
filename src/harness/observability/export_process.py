"""Spans exported by a child process: the harness only writes plain data to a pipe.

Building the SDK's `ReadableSpan`s, batching them and encoding OTLP protobuf cost more
than the run they describe, and the exporter thread holds the GIL the event loop needs.
So when traces go to OTLP, `ProcessExport` starts `python -m
harness.observability.export_process` with the same environment (its `OTEL_*` variables
configure the exporter there) and writes finished spans to its stdin in length-prefixed
JSON frames. The child rebuilds them with their stored ids and times and exports them
exactly as `harness.observability.otel.OtelExport` does in process.

The spans `LiveTraces` hands over (`export_records`, the builder's plain tuples) are queued
as they are and packed into one frame when they are written, up to `flush_s` later: one
encoding and one write for all the runs of that moment, not one per step of each run (a
step hands over a list; that is all it costs here). At most `_BATCH` spans wait as tuples
(in a burst, a frame is packed as soon as that many are queued): spans kept longer would
outlive the collector's young generations and lengthen its full passes.

Writes never block the event loop: the pipe is non-blocking, what it cannot take waits
in a bounded buffer drained when the pipe is writable, and past the bound spans are
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
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from harness.core.codec import pack, unpack
from harness.observability._otlp import SpanEncoder
from harness.observability.context import TraceContext
from harness.observability.live import SpanExport
from harness.observability.spans import SpanData, SpanRecord

if TYPE_CHECKING:
    from harness.observability.otel import RequestExport

__all__ = ["ProcessExport", "main"]

_log = logging.getLogger(__name__)
_HEADER: Final = struct.Struct(">I")
_QUEUE: Final = 16_384
"""The child's `OTEL_BSP_MAX_QUEUE_SIZE` unless set: spans waiting for a batch."""
_EAGER: Final = 64 << 10
"""Buffered bytes written at once, without waiting for the timer (a pipe's capacity)."""
_READ: Final = 1 << 20
"""Bytes the child reads from its pipe at once."""
_BATCH: Final = 512
"""Queued spans packed into a frame at once, without waiting for the timer."""
_Entry = tuple[str, str, str | None, str, Sequence[SpanRecord]]
"""A run's spans in a frame: its trace id, run span id, parent span id, run id, the spans."""


class ProcessExport(SpanExport):
    """Hands finished spans to a child process that exports them (see the module).

    Args:
        kind: The exporter (`otlp`, `console`); from `OTEL_TRACES_EXPORTER` when omitted.
        max_buffer: Bytes of frames held while the child is behind; past it spans are
            dropped (and counted in `dropped`).
        close_timeout: Seconds `shutdown` waits for the child to export and exit.
        flush_s: Frames are written at most this long after they are buffered, many at
            once (a write to a pipe costs more than encoding a run's spans).
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
        self._queued: list[_Entry] = []  # spans not packed yet
        self._queued_spans = 0
        self._pending = bytearray()
        self._frames: deque[list[int]] = deque()  # [bytes not yet written, spans] a frame
        self._lock = threading.Lock()
        self._watching: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._dead = False
        self.dropped = 0
        """Spans dropped: the child was too far behind, or gone."""

    def export(self, context: TraceContext, run_id: str, spans: Sequence[SpanData]) -> None:
        """Buffer the spans for the child's pipe; written within `flush_s`, never blocking."""
        frame = _frame([_entry(context, run_id, [_record(span) for span in spans])])
        with self._lock:
            if self._closed or self._dead:
                self.dropped += len(spans)
                return
            self._pack()  # what was queued before goes first
            self._buffer(frame, len(spans))
            self._due_soon()

    def export_records(
        self, context: TraceContext, run_id: str, records: Sequence[SpanRecord]
    ) -> None:
        """Queue the spans as they are; packed and written within `flush_s`, never blocking."""
        with self._lock:
            if self._closed or self._dead:
                self.dropped += len(records)
                return
            self._queued.append(
                (context.trace_id, context.span_id, context.parent_span_id, run_id, records)
            )
            self._queued_spans += len(records)
            if self._queued_spans >= _BATCH:
                self._pack()
            if self._timer is None and self._watching is None:
                self._due_soon()

    def _due_soon(self) -> None:
        """Make sure a write comes: now, or within `flush_s` (the lock is held)."""
        if self._timer is not None or self._watching is not None:
            return  # a write is already due
        if len(self._pending) < _EAGER and self._schedule():
            return
        self._write()

    def _pack(self) -> None:
        """The queued spans, as one frame in the buffer (the lock is held)."""
        if not self._queued:
            return
        queued, spans = self._queued, self._queued_spans
        self._queued, self._queued_spans = [], 0
        self._buffer(_frame(queued), spans)

    def _buffer(self, frame: bytes, spans: int) -> None:
        """Hold `frame` for the pipe; drop it if the buffer is full (the lock is held)."""
        if len(self._pending) + len(frame) > self._max_buffer:
            self._drop(spans)
            return
        self._pending += frame
        self._frames.append([len(frame), spans])

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
            _log.warning("%d spans were not exported (the export process was behind)", self.dropped)

    def _flush(self) -> None:
        """Write what the pipe takes now (the lock is held)."""
        try:
            while self._pending:
                written = os.write(self._fd, self._pending)
                del self._pending[:written]
                self._sent(written)
        except BlockingIOError:
            return
        except OSError:
            self._gone()

    def _schedule(self) -> bool:
        """Write in `flush_s`: one write for many frames (the lock is held)."""
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

    def _sent(self, written: int) -> None:
        """Forget the frames `written` bytes completed (the lock is held)."""
        frames = self._frames
        while written and frames:
            if written < frames[0][0]:
                frames[0][0] -= written
                return
            written -= frames.popleft()[0]

    def _discard(self) -> None:
        """Drop what was not written, counting its spans (the lock is held)."""
        self.dropped += sum(spans for _, spans in self._frames) + self._queued_spans
        self._frames.clear()
        self._pending.clear()
        self._queued, self._queued_spans = [], 0

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
                len(self._pending),
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


def _entry(context: TraceContext, run_id: str, records: Sequence[SpanRecord]) -> _Entry:
    return (context.trace_id, context.span_id, context.parent_span_id, run_id, records)


def _record(span: SpanData) -> SpanRecord:
    events = [(e.name, e.ts, e.attributes) for e in span.events]
    attributes = dict(span.attributes)
    return (span.span_id, span.parent_id, span.name, span.kind, span.start, span.end,
            attributes, events, span.status, span.status_message, span.finished)  # fmt: skip


def _frame(entries: Sequence[_Entry]) -> bytes:
    body = pack(entries)
    return _HEADER.pack(len(body)) + body


def _runs(data: Any) -> list[tuple[TraceContext, str, Sequence[Sequence[Any]]]]:
    """The runs of a frame with their spans as sent, as `SpanSink.add_records` takes them.

    JSON made the spans' tuples of strings lists: the OTLP encoder writes either as an
    array.
    """
    return [
        (
            TraceContext(trace_id=trace_id, span_id=span_id, parent_span_id=parent_span_id),
            run_id,
            records,
        )
        for trace_id, span_id, parent_span_id, run_id, records in data
    ]


def main(argv: Sequence[str] = sys.argv[1:]) -> int:
    """The child: read frames from stdin until it ends, export them, flush, exit."""
    from harness.observability.otel import batch_sink, request_export

    logging.basicConfig(format="harness trace export: %(levelname)s %(message)s")
    # A burst of runs arrives faster than batches of 512 go out; the SDK's default queue
    # (2,048 spans) would drop most of it. The pipe's bound is the back-pressure here.
    os.environ.setdefault("OTEL_BSP_MAX_QUEUE_SIZE", str(_QUEUE))
    kind = argv[0] if argv else None
    direct = request_export(kind)
    if direct is not None:
        _encode_and_send(sys.stdin.buffer, direct)
        return 0
    sink = batch_sink(kind)
    try:
        for body in _bodies(sys.stdin.buffer):
            for context, run_id, records in _runs(unpack(body)):
                sink.add_records(context, run_id, records)
    finally:
        sink.shutdown()
    return 0


def _bodies(stdin: BinaryIO) -> Iterator[bytes]:
    """The frames' bodies, until stdin ends (or ends inside a frame).

    What the pipe holds is read at once (up to `_READ` bytes) and cut into frames: one
    system call for all the frames the harness wrote together, not two a frame.
    """
    fd = stdin.fileno()
    buffer = b""
    while chunk := os.read(fd, _READ):
        buffer = buffer + chunk if buffer else chunk
        start, end = 0, len(buffer)
        while end - start >= _HEADER.size:
            (size,) = _HEADER.unpack_from(buffer, start)
            stop = start + _HEADER.size + size
            if stop > end:
                break
            yield buffer[start + _HEADER.size : stop]
            start = stop
        buffer = buffer[start:]


def _encode_and_send(stdin: BinaryIO, export: RequestExport) -> None:
    """OTLP without the SDK's objects: each run's spans encoded as they come, sent in batches."""
    encoder = SpanEncoder(export.resource, *export.scope)
    batches = _Batches(encoder, export)
    try:
        for body in _bodies(stdin):
            for trace_id, span_id, parent_span_id, run_id, records in unpack(body):
                spans = encoder.spans(trace_id, span_id, parent_span_id, run_id, records)
                batches.add(spans, len(records))
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
