"""File tools confined to a workspace: `read_file`, `write_file`, `edit_file`, `list_dir`, `search`.

Every path is relative to the workspace root. Absolute paths, `..` and symbolic links
anywhere in a path are refused, and walks never follow a link, so neither the model nor a
sandboxed process that plants links can make the harness touch a file outside the workspace.
"""

from __future__ import annotations

import collections
import contextlib
import difflib
import fnmatch
import itertools
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

from harness.errors import ToolError
from harness.tools.builtin._fs import Entry, Private, Workspace
from harness.tools.builtin._regex import Regex, RegexError, compile_regex
from harness.tools.feedback import did_you_mean
from harness.tools.spec import SideEffects, ToolSpec

__all__ = [
    "edit_file_tool",
    "file_tools",
    "list_dir_tool",
    "read_file_tool",
    "search_tool",
    "write_file_tool",
]

_MAX_FILE_BYTES: Final = 8 << 20  # the largest file read, edited or searched
_LINE_CHARS: Final = 2000
_MATCH_CHARS: Final = 240
_MAX_SEARCHED_FILES: Final = 20_000
_NOT_ENTERED: Final = frozenset({".git"})
_KINDS_LISTED: Final = 5
_MARGIN: Final = 2000  # room in max_result_chars beyond a tool's own cap, for notes
_PATHS: Final = "Paths are relative to the workspace root; symbolic links are never followed."
_LINE_PREFIX: Final = re.compile(r"\s*\d+│")


def _arg(kind: str | list[str], description: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **extra}


def _spec(
    function: Callable[..., str], effects: SideEffects, text: str, max_chars: int | None = None
) -> Callable[..., ToolSpec]:
    """Declare a file tool; the returned function takes its required and other parameters."""

    def declare(required: list[str], **properties: dict[str, Any]) -> ToolSpec:
        schema = {"type": "object", "properties": properties, "required": required}
        return ToolSpec.from_schema(
            name=function.__name__,
            description=f"{text} {_PATHS}",
            parameters=schema | {"additionalProperties": False},
            function=function,
            side_effects=effects,
            max_result_chars=max_chars,
        )

    return declare


def read_file_tool(
    workspace: str | Path | None = None, *, max_chars: int = 20_000, private: Private = ()
) -> ToolSpec:
    """Make `read_file` for `workspace` (`None`: the cwd), showing `max_chars` per call.

    `private` directories inside the workspace (harness's own home) are out of reach; so
    for every file tool.
    """
    files = Workspace(workspace or Path.cwd(), private=private)

    def read_file(path: str, start_line: int = 1, end_line: int | None = None) -> str:
        shown = "/".join(files.parts(path))
        data = files.read(path, max_bytes=_MAX_FILE_BYTES)
        if _is_binary(data):
            raise _binary(shown, len(data))
        return _page(shown, _decode_lines(data), start_line, end_line, max_chars)

    text = (
        "Read a text file of the workspace, with line numbers (`  12│ text`: the number and "
        f"`│ ` are not part of the file). One call shows up to about {max_chars:,} characters; "
        "pick lines with start_line and end_line; the note at the end says how to read on."
    )
    return _spec(read_file, "none", text, max_chars + _MARGIN)(
        ["path"],
        path=_arg("string", "File to read, relative to the workspace root."),
        start_line=_arg("integer", "First line to show, from 1.", minimum=1),
        end_line=_arg(["integer", "null"], "Last line to show; omit it for all.", minimum=1),
    )


def write_file_tool(workspace: str | Path | None = None, *, private: Private = ()) -> ToolSpec:
    """Make `write_file` for `workspace` (`None`: the current directory)."""
    files = Workspace(workspace or Path.cwd(), private=private)

    def write_file(path: str, content: str) -> str:
        shown = "/".join(files.parts(path))
        data = _encode(content)
        previous, made = files.write(path, data)
        size = f"{_count(len(data), 'byte')}, {_count(len(_decode_lines(data)), 'line')}"
        was = "a new file" if previous is None else f"replacing {_count(previous, 'byte')}"
        dirs = f" Created the directories {', '.join(made)}." if made else ""
        return f"Wrote {shown!r} ({was}): {size}.{dirs}"

    text = (
        "Create a file of the workspace, or replace all of its content, creating missing "
        "parent directories. To change part of an existing file, use edit_file instead."
    )
    return _spec(write_file, "mutating", text)(
        ["path", "content"],
        path=_arg("string", "File to write, relative to the workspace root."),
        content=_arg("string", "The complete new content of the file."),
    )


def edit_file_tool(workspace: str | Path | None = None, *, private: Private = ()) -> ToolSpec:
    """Make `edit_file` for `workspace` (`None`: the current directory)."""
    files = Workspace(workspace or Path.cwd(), private=private)

    def edit_file(path: str, old_text: str, new_text: str) -> str:
        shown = "/".join(files.parts(path))
        _check_edit(old_text, new_text)
        at: list[int] = []

        def change(data: bytes) -> bytes:
            if _is_binary(data):
                raise _binary(shown, len(data))
            text = data.decode("utf-8", "surrogateescape")
            at.append(_find_once(shown, text, old_text))
            return _encode(text.replace(old_text, new_text, 1))

        lines = _decode_lines(files.update(path, change, max_bytes=_MAX_FILE_BYTES))
        line = min(at[0], max(1, len(lines)))
        start, stop = max(1, line - 2), line + new_text.count("\n") + 3
        return (
            f"Edited {shown!r} at line {line}; it has {len(lines)} lines now. "
            f"Lines {start}-{min(stop, len(lines))} after the edit:\n"
            + _numbered(lines[start - 1 : stop], start)
        )

    text = (
        "Replace one piece of text in a file of the workspace. old_text must occur exactly once "
        "in the file, character for character: copy it from read_file's output with its "
        "whitespace and indentation but without the line-number prefixes, and include enough "
        "neighbouring lines to make it unique. To rewrite a whole file, use write_file."
    )
    return _spec(edit_file, "mutating", text)(
        ["path", "old_text", "new_text"],
        path=_arg("string", "File to edit, relative to the workspace root."),
        old_text=_arg("string", "The exact text to replace; it must occur once in the file."),
        new_text=_arg("string", "The text to put in its place (empty to delete it)."),
    )


def list_dir_tool(
    workspace: str | Path | None = None, *, max_entries: int = 300, private: Private = ()
) -> ToolSpec:
    """Make `list_dir` for `workspace` (`None`: the cwd), listing `max_entries` per call."""
    files = Workspace(workspace or Path.cwd(), private=private)

    def list_dir(path: str = ".", depth: int = 1) -> str:
        shown = "/".join(files.parts(path, allow_root=True)) or "."
        with contextlib.closing(files.walk(path, max_depth=depth, skip=_NOT_ENTERED)) as walk:
            entries = list(itertools.islice(walk, max_entries + 1))
        if not entries:
            return f"The directory {shown!r} is empty. Create files in it with write_file."
        rows = [_row(entry, depth) for entry in entries[:max_entries]]
        if len(entries) > max_entries:
            rows.append(f"[only {max_entries} entries shown: list a subdirectory, or less deep]")
        return f"Entries of {shown!r} (depth {depth}):\n" + "\n".join(rows)

    text = (
        "List a directory of the workspace, sorted by name: directories end with '/', files "
        "show their size, symbolic links where they point. With depth > 1, subdirectories are "
        "listed too ('.git' is not entered). Paths in the result start at the workspace root."
    )
    return _spec(list_dir, "none", text, max_entries * 100 + _MARGIN)(
        [],
        path=_arg("string", "Directory to list, relative to the workspace root; '.' is it."),
        depth=_arg("integer", "Levels to list (default 1).", minimum=1, maximum=10),
    )


def search_tool(
    workspace: str | Path | None = None, *, max_matches: int = 100, private: Private = ()
) -> ToolSpec:
    """Make `search` for `workspace` (`None`: the cwd), reporting `max_matches` per call."""
    files = Workspace(workspace or Path.cwd(), private=private)

    def search(pattern: str, path: str = ".", glob: str | None = None) -> str:
        regex = _compile(pattern)
        scope = "/".join(files.parts(path, allow_root=True)) or "."
        where = f"in {scope!r}" + (f" (files matching {glob!r})" if glob else "")
        scan = _Scan(regex, glob or "*", max_matches)
        with contextlib.closing(files.walk(path, max_depth=64, skip=_NOT_ENTERED)) as walk:
            scan.run(walk)
        return scan.report(pattern, where)

    text = (
        "Search the text files under a path of the workspace, line by line, for a regular "
        "expression (Python syntax without backreferences or lookaround); each match comes back "
        "as `path:line: text`. glob limits the files: "
        "'*.py' is matched against file names, 'src/*.py' against paths. Binary files, '.git' "
        "and symbolic links are skipped. Start the pattern with (?i) to ignore case."
    )
    return _spec(search, "none", text, max_matches * (_MATCH_CHARS + 100) + _MARGIN)(
        ["pattern"],
        pattern=_arg("string", "Regular expression, e.g. 'def \\w+' or '(?i)todo'."),
        path=_arg("string", "Directory or file to search, relative to the workspace root."),
        glob=_arg(["string", "null"], "Only files matching this, e.g. '*.py' or 'src/*.py'."),
    )


def file_tools(workspace: str | Path | None = None, *, private: Private = ()) -> list[ToolSpec]:
    """`read_file`, `write_file`, `edit_file`, `list_dir` and `search` for `workspace`."""
    makers = (read_file_tool, write_file_tool, edit_file_tool, list_dir_tool, search_tool)
    return [make(workspace, private=private) for make in makers]


def _is_binary(data: bytes) -> bool:
    """Whether `data` looks like the start of a binary file (it has a NUL byte early on)."""
    return b"\0" in data[:8192]


def _decode_lines(data: bytes) -> list[str]:
    """The lines of a text file (UTF-8, bad bytes replaced), without their line ends."""
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _count(number: int, noun: str, plural: str = "s") -> str:
    return f"{number:,} {noun}{plural if number != 1 else ''}"


def _encode(text: str) -> bytes:
    try:  # surrogateescape gives back the undecodable bytes of a file being edited
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # another lone surrogate, sent by the model
        return text.encode("utf-8", "replace")


def _clip(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… [{len(line) - limit:,} more characters on this line]"


def _numbered(lines: list[str], first: int) -> str:
    width = max(4, len(str(first + len(lines) - 1)))
    rows = (f"{n:>{width}}│ {_clip(line, _LINE_CHARS)}" for n, line in enumerate(lines, first))
    return "\n".join(rows)


def _page(shown: str, lines: list[str], start: int, end: int | None, max_chars: int) -> str:
    """Lines `start` to `end` of a file, numbered, within `max_chars`, and how to read on."""
    total = len(lines)
    if total == 0:
        return f"[{shown!r} is empty: 0 lines]"
    if start > total or (end is not None and end < start):
        raise ToolError(
            f"Lines {start} to {end or 'the end'} are not in {shown!r}, which has {total} lines.",
            hint=f"Use 1 <= start_line <= end_line, with start_line at most {total}.",
        )
    sizes = itertools.accumulate(len(_clip(line, _LINE_CHARS)) + 8 for line in lines[start - 1 :])
    fitting = sum(1 for _ in itertools.takewhile(lambda size: size <= max_chars, sizes))
    last = min(end or total, total, start - 1 + max(1, fitting))
    note = f"[{shown!r}: lines {start}-{last} of {total}"
    if last < total:
        note += f". To read on, call read_file with start_line={last + 1}.]"
    else:
        note += ", the whole file.]" if start == 1 else ", to the end of the file.]"
    return f"{_numbered(lines[start - 1 : last], start)}\n{note}"


def _binary(shown: str, size: int) -> ToolError:
    return ToolError(
        f"{shown!r} is a binary file ({size:,} bytes); the file tools only handle text.",
        hint="Use a program that understands its format, e.g. file or xxd in bash if you can.",
    )


def _check_edit(old_text: str, new_text: str) -> None:
    if not old_text or old_text == new_text:
        raise ToolError(
            "old_text and new_text are the same, so the edit would change nothing."
            if old_text
            else "old_text is empty, so there is nothing to find and replace.",
            hint="Put the exact text to replace in old_text and what replaces it in new_text; "
            "to write a whole file, use write_file.",
        )


def _find_once(shown: str, text: str, old: str) -> int:
    """Where the only occurrence of `old` in `text` starts, or a `ToolError` for the model."""
    starts = [match.start() for match in re.finditer(f"(?={re.escape(old)})", text)]
    if not starts:
        raise _absent(shown, text, old)
    if len(starts) > 1:
        lines = [str(text.count("\n", 0, start) + 1) for start in starts]
        listed = ", ".join(lines[:20]) + (", ..." if len(lines) > 20 else "")
        raise ToolError(
            f"old_text occurs {len(starts)} times in {shown!r} (at lines {listed}); it must "
            "occur exactly once.",
            hint="Include more of the surrounding lines in old_text so that it matches only "
            "the place you mean; to change every occurrence, edit them one by one.",
        )
    return text.count("\n", 0, starts[0]) + 1


def _absent(shown: str, text: str, old: str) -> ToolError:
    hint = (
        "Read the file with read_file and copy the exact text, with its whitespace and "
        "indentation, into old_text."
    )
    if all(_LINE_PREFIX.match(line) for line in old.splitlines()):
        hint = "Leave out the line-number prefixes (like `  12│ `) of read_file. " + hint
    if "\r\n" in text and "\r\n" not in old:
        hint += " The file has Windows line ends (\\r\\n): put them in old_text too."
    return ToolError(f"old_text was not found in {shown!r}.{_nearest(text, old)}", hint=hint)


def _nearest(text: str, old: str) -> str:
    """Where something like `old` is in `text`, for the model's next try, or ''."""
    have = [line.strip() for line in text.split("\n")]
    want = [line.strip() for line in old.strip("\n").split("\n")]
    for index in range(len(have) - len(want) + 1):
        if have[index : index + len(want)] == want:
            return f" It is at line {index + 1} with other whitespace or indentation."
    first = next((line for line in want if line), "")
    close = difflib.get_close_matches(first, have, n=1, cutoff=0.6) if first else []
    if not close:
        return ""
    number = have.index(close[0]) + 1
    return f" The most similar line to its first line is line {number}: {_clip(close[0], 200)!r}."


def _row(entry: Entry, depth: int) -> str:
    if entry.kind == "dir":
        closed = entry.name in _NOT_ENTERED and entry.depth < depth
        return f"{entry.path}/" + ("  (not entered)" if closed else "")
    if entry.kind == "symlink":
        return f"{entry.path} -> {entry.target}  (symbolic link, not followed)"
    if entry.kind == "file":
        return f"{entry.path}  ({_count(entry.size, 'byte')})"
    return f"{entry.path}  (special file)"


def _compile(pattern: str) -> Regex:
    try:
        return compile_regex(pattern)
    except RegexError as exc:
        hint = (
            "This search matches in linear time, so it has no backreferences (\\1) or "
            "lookaround ((?=...), (?<=...)): search for a looser pattern and read the files."
            if exc.unsupported
            else "Put a backslash before ( ) [ ] { } . * + ? | ^ $ \\ to match them as "
            "plain characters, e.g. 'print\\(' to find 'print('."
        )
        raise ToolError(
            f"{pattern!r} is not a valid regular expression: {exc.reason}.", hint=hint
        ) from None


class _Scan:
    """One search over files met by a walk: what it found and what it skipped."""

    def __init__(self, regex: Regex, glob: str, max_matches: int) -> None:
        self.regex, self.glob, self.max_matches = regex, glob, max_matches
        self.hits: list[str] = []
        self.searched = self.skipped = 0
        self.stopped = ""
        self.unmatched = collections.Counter[str]()
        """Files the glob left out, by `*.ext` (or name), to suggest a better glob."""

    def run(self, entries: Iterable[Entry]) -> None:
        for entry in entries:
            named = entry.path if "/" in self.glob else entry.name  # 'src/*.py' or '*.py'
            if entry.kind != "file":
                continue
            if not fnmatch.fnmatchcase(named, self.glob):
                self.unmatched[_kind_glob(entry.name)] += 1
                continue
            if self.searched == _MAX_SEARCHED_FILES:
                self.stopped = f"after {_MAX_SEARCHED_FILES:,} files"
                return
            data = Workspace.read_entry(entry, max_bytes=_MAX_FILE_BYTES)
            if data is None or _is_binary(data):
                self.skipped += 1
                continue
            self.searched += 1
            for number, line in enumerate(_decode_lines(data), 1):
                if not self.regex.search(line):
                    continue
                if len(self.hits) == self.max_matches:
                    self.stopped = f"at {self.max_matches} matches"
                    return
                self.hits.append(f"{entry.path}:{number}: {_clip(line.strip(), _MATCH_CHARS)}")

    def report(self, pattern: str, where: str) -> str:
        counts = f"{_count(self.searched, 'text file')} searched" + (
            f"; {self.skipped:,} binary, unreadable or over 8 MiB skipped" if self.skipped else ""
        )
        if self.hits:
            stop = f"\n[stopped {self.stopped}: narrow the pattern, path or glob]"
            head = f"{_count(len(self.hits), 'match', 'es')} for {pattern!r} {where} ({counts}):\n"
            return head + "\n".join(self.hits) + (stop if self.stopped else "")
        return f"No matches for {pattern!r} {where} ({counts}). {self._advice()}"

    def _advice(self) -> str:
        if self.searched:
            return (
                "Try a shorter or looser pattern, (?i) to ignore case, a backslash before "
                "special characters such as ( [ . *, or a wider path; list_dir shows the files."
            )
        if self.skipped:
            return (
                "The search reads text files only; look into the others with a program that "
                "knows their format, e.g. in bash."
            )
        if self.glob == "*":
            return "There is no text file there to search; list_dir shows what the path holds."
        kinds = [kind for kind, _ in self.unmatched.most_common(_KINDS_LISTED)]
        seen = ", ".join(f"{kind} ({self.unmatched[kind]:,})" for kind in kinds)
        guess = did_you_mean(self.glob, self.unmatched)
        return (
            f"No text file matched the glob {self.glob!r}: '*.py' is matched against file "
            "names, 'src/*.py' against paths from the workspace root; try another glob or none."
            + (f" Files there: {seen}." if seen else "")
            + (f" {guess}" if guess else "")
        )


def _kind_glob(name: str) -> str:
    """`*.py` for `main.py`; the name itself when it has no extension (e.g. `Makefile`)."""
    stem, dot, extension = name.rpartition(".")
    return f"*.{extension}" if dot and stem else name
