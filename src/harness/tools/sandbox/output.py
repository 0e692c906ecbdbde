"""Keep the head and tail of a command's output, and make it safe to show to a model."""

from __future__ import annotations

import codecs
import re

__all__ = ["OutputBuffer", "clean_text"]

# CSI (colours, cursor moves) and OSC (titles, hyperlinks) sequences, removed whole so that
# no `[31m` debris is left once the ESC itself is stripped.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_CONTINUATION_MAX = 3


def clean_text(data: bytes, *, final: bool = True) -> str:
    """Decode UTF-8 (invalid bytes become U+FFFD) and strip control characters but LF and TAB.

    Args:
        data: Raw output.
        final: False when `data` may end inside a UTF-8 sequence that continues elsewhere;
            those trailing bytes are dropped instead of replaced.

    Returns:
        Printable text: ANSI escape sequences removed, CRLF turned into LF.
    """
    text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(data, final=final)
    text = _ANSI.sub("", text.replace("\r\n", "\n"))
    return _CONTROL.sub("", text)


class OutputBuffer:
    """Counts all output and keeps its first `head` and last `tail` bytes.

    Args:
        head: Bytes kept from the start.
        tail: Bytes kept from the end.
    """

    def __init__(self, *, head: int, tail: int) -> None:
        self._head_max = head
        self._tail_max = tail
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        """Bytes fed so far."""

    def feed(self, chunk: bytes) -> None:
        """Add the next chunk of output."""
        self.total += len(chunk)
        room = self._head_max - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        self._tail += chunk
        # Trim only when twice too long, so trimming stays amortised O(1) per byte.
        if len(self._tail) > 2 * self._tail_max:
            del self._tail[: len(self._tail) - self._tail_max]

    @property
    def omitted(self) -> int:
        """Bytes that were neither kept in the head nor in the tail."""
        return max(0, self.total - len(self._head) - self._tail_max)

    def text(self) -> str:
        """The kept output, with `[... N bytes omitted ...]` between head and tail if needed."""
        if not self.omitted:
            return clean_text(bytes(self._head + self._tail))
        tail = bytes(self._tail[-self._tail_max :])
        tail = _skip_continuation_bytes(tail)
        marker = f"\n[... {self.omitted} bytes omitted ...]\n"
        return clean_text(bytes(self._head), final=False) + marker + clean_text(tail)


def _skip_continuation_bytes(data: bytes) -> bytes:
    """Drop the end of a UTF-8 sequence cut off by the start of `data`."""
    start = 0
    while start < min(len(data), _CONTINUATION_MAX) and 0x80 <= data[start] <= 0xBF:
        start += 1
    return data[start:]
