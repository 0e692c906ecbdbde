"""`StoredResults`: the full text of cut tool results, kept in the store with their step."""

from __future__ import annotations

from harness.runtime.sink import StoreSink
from harness.store.protocol import EventStore

__all__ = ["StoredResults", "result_key"]


def result_key(call_id: str) -> str:
    """The blob key of the full result of call `call_id`."""
    return f"result:{call_id}"


class StoredResults:
    """A `ResultStore` whose texts commit with the step that produced them.

    So `read_result` still pages through a result after the run was paused, resumed or
    taken over by another process. Until its step commits, a text is read from the sink.

    Args:
        store: Where committed results are read from.
        sink: The run's sink; saved texts join its next commit.
    """

    __slots__ = ("_sink", "_store")

    def __init__(self, store: EventStore, sink: StoreSink) -> None:
        self._store, self._sink = store, sink

    def save(self, run_id: str, call_id: str, text: str) -> None:
        """Keep the full result of one call with the step being written."""
        self._sink.blob(result_key(call_id), text)

    async def load(self, run_id: str, call_id: str) -> str | None:
        """The full result of one call, or `None` if none was kept."""
        key = result_key(call_id)
        text = self._sink.pending_blob(key)
        return text if text is not None else await self._store.get_blob(run_id, key)
