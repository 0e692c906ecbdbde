"""The one home of RE2: regular expressions the model writes, matched in linear time.

Python's `re` backtracks: a pattern such as `(a+)+$` over a long line takes exponential time,
and as `re` holds the GIL while it matches, a worker thread does not help: the whole process,
event loop included, stops until the match ends. RE2 (the `google-re2` package) never
backtracks, so no pattern can take longer than the text is long. Its syntax is Python's less
backreferences and lookaround, the two features that need backtracking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import re2  # pyright: ignore[reportMissingTypeStubs]

_RE2: Any = re2
_RE2_ERROR = cast(type[Exception], _RE2.error)

__all__ = ["Regex", "RegexError", "compile_regex"]


class RegexError(ValueError):
    """A pattern RE2 cannot compile.

    Args:
        reason: What RE2 said, e.g. `missing ): print(`.
        unsupported: Whether the pattern uses a feature RE2 leaves out on purpose.
    """

    def __init__(self, reason: str, *, unsupported: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.unsupported = unsupported


@dataclass(frozen=True, slots=True)
class Regex:
    """A compiled pattern; matching takes time linear in the text."""

    pattern: str
    """The pattern as written."""
    _compiled: Any

    def search(self, text: str) -> bool:
        """Whether the pattern matches anywhere in `text`."""
        return self._compiled.search(text) is not None


def compile_regex(pattern: str) -> Regex:
    """Compile `pattern` with RE2.

    Raises:
        RegexError: The pattern is not valid RE2 syntax.
    """
    options = _RE2.Options()
    options.log_errors = False  # the error is raised to the caller, not printed on stderr
    try:
        compiled: Any = _RE2.compile(pattern, options)
    except _RE2_ERROR as exc:
        reason = _reason(exc)
        raise RegexError(reason, unsupported=_is_unsupported(reason, pattern)) from None
    return Regex(pattern, compiled)


def _reason(exc: Exception) -> str:
    raw: object = exc.args[0] if exc.args else str(exc)
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


def _is_unsupported(reason: str, pattern: str) -> bool:
    lookaround = any(marker in pattern for marker in ("(?=", "(?!", "(?<=", "(?<!", "(?P="))
    backreference = reason.startswith("invalid escape sequence: \\") and reason[-1:].isdigit()
    return lookaround or backreference
