"""Files in a workspace, reached without ever leaving it or following a symbolic link.

The model and sandboxed commands control the workspace's content and may swap any path for a
symlink at any moment (research/sandbox.md §2.6, the confused deputy). So every operation
starts from a descriptor of the workspace directory, opens one component at a time with
`O_NOFOLLOW` relative to its parent's descriptor, and reads or writes through the descriptor
it checked: no path is resolved by name twice, and a path with a symlink anywhere is refused.
When the harness runs as root in a workspace of another owner (a user's project, or one of
the sandbox uid's), what it creates is handed to the workspace's owner and group, as bash's
idmapped workspace does for what commands create.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from harness.errors import ToolError
from harness.tools.feedback import did_you_mean
from harness.tools.workspaces import allowed_workspace

__all__ = ["Entry", "EntryKind", "Private", "Workspace", "private_parts"]

EntryKind = Literal["dir", "file", "symlink", "other"]
"""What a directory entry is; symlinks are reported as such and never followed."""

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOFOLLOW: Final = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_READ_FLAGS: Final = os.O_RDONLY | _NOFOLLOW
_RDWR_FLAGS: Final = os.O_RDWR | _NOFOLLOW
_CREATE_FLAGS: Final = _RDWR_FLAGS | os.O_CREAT | os.O_EXCL
_CHUNK: Final = 1 << 16
_EXAMPLE: Final = "e.g. 'src/main.py'"

Parts = tuple[str, ...]
Private = Sequence[str | Path]
"""Directories inside a workspace that no tool may touch (harness's own home)."""
Owner = tuple[int, int] | None  # uid and gid for what the tools create, if not the harness's


@dataclass(frozen=True, kw_only=True, slots=True)
class Entry:
    """One directory entry met while walking the workspace."""

    path: str
    """Path relative to the workspace root, `/`-separated."""
    name: str
    """The last component of `path`."""
    kind: EntryKind
    """What the entry is, as seen without following symlinks."""
    size: int
    """Size in bytes (of the link itself for a symlink)."""
    depth: int
    """1 for the children of the walked directory, 0 when a single file was walked."""
    target: str | None = None
    """Where a symlink points, as stored in the link; never followed."""
    dir_fd: int = field(default=-1, repr=False, compare=False)
    """Descriptor of the directory holding the entry, open until the walk moves on."""


class Workspace:
    """A directory (`root`, trusted) whose files are used without following any symlink.

    Raises:
        WorkspaceRefused: `root` breaks the workspace rule (`harness.tools.workspaces`).
    """

    def __init__(self, root: str | Path, *, private: Private = ()) -> None:
        self.root = allowed_workspace(root)
        self.private = private_parts(self.root, private)

    def parts(self, path: str, *, allow_root: bool = False) -> Parts:
        """The components of `path`; a `ToolError` if it is absolute or uses `..`."""
        if "\0" in path:
            raise ToolError(f"{path!r} contains a NUL character.", hint="Remove it.")
        parts = tuple(part for part in path.split("/") if part not in ("", "."))
        if path.startswith("/") or ".." in parts:
            raise _outside(path, self.root)
        self._check_public(path, parts)
        if not parts and not allow_root:
            raise ToolError(
                f"{path!r} is the workspace root itself, but a file path is needed.",
                hint=f"Name a file relative to the workspace root, {_EXAMPLE}.",
            )
        return parts

    def _check_public(self, path: str, parts: Parts) -> None:
        for private in self.private:
            if parts[: len(private)] == private:
                raise ToolError(
                    f"{path!r} is inside {'/'.join(private)!r}, which belongs to harness itself "
                    "(its records or its code); it is not part of the workspace.",
                    hint="Work with the project's other files.",
                )

    def read(self, path: str, *, max_bytes: int) -> bytes:
        """The content of the regular file at `path`, at most `max_bytes` long."""
        parts = self.parts(path)
        with self._parent(parts) as (_, parent), _opened(parent, parts, _READ_FLAGS) as fd:
            _check(fd, parts, max_bytes)
            return _read_all(fd, max_bytes)

    def write(self, path: str, data: bytes) -> tuple[int | None, list[str]]:
        """Replace or create the file at `path`, and any missing directories on the way.

        Returns:
            The size the file had (`None` if it was created) and the directories created.
        """
        parts = self.parts(path)
        made: list[str] = []
        with self._parent(parts, made) as (owner, parent):
            fd, previous = _open_for_write(parent, parts, owner)
            with _closing(fd):
                _replace_content(fd, data)
        return previous, made

    def update(self, path: str, change: Callable[[bytes], bytes], *, max_bytes: int) -> bytes:
        """Replace the content of the file at `path` by `change(content)`, and return it.

        A `ToolError` raised by `change` leaves the file as it was.
        """
        parts = self.parts(path)
        with self._parent(parts) as (_, parent), _opened(parent, parts, _RDWR_FLAGS) as fd:
            _check(fd, parts, max_bytes, writing=True)
            new = change(_read_all(fd, max_bytes))
            _replace_content(fd, new)
            return new

    def walk(
        self, path: str, *, max_depth: int, skip: frozenset[str]
    ) -> Generator[Entry, None, None]:
        """The entries under the directory `path`, depth first, sorted by name.

        Symlinks are yielded, never followed; directories named in `skip` are not entered.
        `max_depth` 1 yields the children only. When `path` is a file, it is the only entry
        (depth 0). Exhaust or close the iterator to free its descriptors.
        """
        parts = self.parts(path, allow_root=True)
        hidden = frozenset("/".join(private) for private in self.private)
        with self._parent(parts or ("",)) as (_, parent):
            if not parts:
                yield from _walk_dir(parent, "", 1, max_depth, skip, hidden)
                return
            info = _lstat(parent, parts)
            if not stat.S_ISDIR(info.st_mode):
                yield _entry(parent, "/".join(parts), info, depth=0)
                return
            with _opened(parent, parts, _DIR_FLAGS) as fd:
                yield from _walk_dir(fd, "/".join(parts) + "/", 1, max_depth, skip, hidden)

    @staticmethod
    def read_entry(entry: Entry, *, max_bytes: int) -> bytes | None:
        """The content of a file met by `walk` (while the walk is at it), or `None`."""
        try:
            fd = os.open(entry.name, _READ_FLAGS, dir_fd=entry.dir_fd)
        except OSError:
            return None
        with _closing(fd):
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
                return None
            return _read_all(fd, max_bytes)

    @contextlib.contextmanager
    def _parent(
        self, parts: Parts, made: list[str] | None = None
    ) -> Generator[tuple[Owner, int], None, None]:
        """The owner for new files and the open directory holding the last of `parts`.

        With `made`, missing directories are created and their paths appended to it.
        """
        try:
            root = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # trusted
        except OSError as exc:
            raise ToolError(
                f"The workspace {str(self.root)!r} cannot be opened: {exc.strerror}.",
                hint="Tell the user: the file tools cannot work without their workspace.",
            ) from None
        info = os.fstat(root)
        # Like bash's idmapped workspace: what is created belongs to the directory's owner.
        foreign = os.geteuid() == 0 and (info.st_uid, info.st_gid) != (0, 0)
        owner = (info.st_uid, info.st_gid) if foreign else None
        fd = root
        try:
            for index in range(len(parts) - 1):
                fd = _enter(fd, parts, index, owner, made)
        except BaseException:
            os.close(fd)
            raise
        with _closing(fd):
            yield owner, fd


def private_parts(root: Path, private: Private) -> tuple[Parts, ...]:
    """The directories of `private` that lie inside `root`, as parts relative to it."""
    found: list[Parts] = []
    for path in private:
        try:
            relative = Path(path).resolve().relative_to(root)
        except ValueError:  # elsewhere: nothing to hide
            continue
        if relative.parts:
            found.append(relative.parts)
    return tuple(found)


@contextlib.contextmanager
def _closing(fd: int) -> Generator[int, None, None]:
    try:
        yield fd
    finally:
        os.close(fd)


def _opened(parent: int, parts: Parts, flags: int) -> contextlib.AbstractContextManager[int]:
    """Open the last of `parts` in `parent`, following no symlink, for a `with` block."""
    try:
        return _closing(os.open(parts[-1], flags, dir_fd=parent))
    except OSError as exc:
        raise _refusal(parent, parts, len(parts) - 1, exc) from None


def _enter(fd: int, parts: Parts, index: int, owner: Owner, made: list[str] | None) -> int:
    """Open directory `parts[index]` in `fd` (made if missing), close `fd`, return the new one."""
    created = False
    try:
        if made is not None:
            with contextlib.suppress(FileExistsError):
                os.mkdir(parts[index], 0o755, dir_fd=fd)
                created = True
        sub = os.open(parts[index], _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise _refusal(fd, parts, index, exc) from None
    os.close(fd)
    if created and made is not None:
        made.append("/".join(parts[: index + 1]))
        if owner is not None:
            os.fchown(sub, *owner)
    return sub


def _lstat(parent: int, parts: Parts) -> os.stat_result:
    try:
        info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
    except OSError as exc:
        raise _refusal(parent, parts, len(parts) - 1, exc) from None
    if stat.S_ISLNK(info.st_mode):
        raise _symlink(parent, parts, len(parts) - 1)
    return info


def _open_for_write(parent: int, parts: Parts, owner: Owner) -> tuple[int, int | None]:
    """Open the file to replace, or create it; returns the descriptor and its old size.

    `O_EXCL` makes creation fail on anything already there, a dangling symlink included;
    the loop then looks again, in case the file was removed or swapped meanwhile.
    """
    for _ in range(3):
        try:
            fd = os.open(parts[-1], _RDWR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _refusal(parent, parts, len(parts) - 1, exc) from None
        else:
            try:
                return fd, _check(fd, parts, writing=True).st_size
            except BaseException:
                os.close(fd)
                raise
        with contextlib.suppress(FileExistsError):
            fd = os.open(parts[-1], _CREATE_FLAGS, 0o644, dir_fd=parent)
            if owner is not None:
                os.fchown(fd, *owner)
            return fd, None
    raise ToolError(f"{'/'.join(parts)!r} kept changing while being written.", hint="Retry.")


def _check(
    fd: int, parts: Parts, max_bytes: int | None = None, *, writing: bool = False
) -> os.stat_result:
    """Refuse anything but a regular file of at most `max_bytes`; to write, not setuid/setgid.

    Hard links are not refused: only someone who may already change the target can make one
    (fs.protected_hardlinks), unlike a symlink, which anyone can point anywhere. A setuid or
    setgid file is never written: as root, the tools keep its bits (CAP_FSETID), so writing
    the model's bytes into it would make a program that runs as its owner.
    """
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise _not_a_file(parts, info.st_mode)
    if writing and info.st_mode & (stat.S_ISUID | stat.S_ISGID):
        raise ToolError(
            f"{'/'.join(parts)!r} is a setuid or setgid program; the file tools never change one.",
            hint="Tell the user; if it should be changed, they can remove its setuid/setgid bits.",
        )
    if max_bytes is not None and info.st_size > max_bytes:
        raise ToolError(
            f"{'/'.join(parts)!r} has {info.st_size:,} bytes, more than the {max_bytes:,} "
            "that the file tools handle.",
            hint="Use search to find the lines you need in it, or bash tools such as "
            "head, tail or sed -n for parts of it.",
        )
    return info


def _read_all(fd: int, limit: int) -> bytes:
    """Read to the end, but at most `limit` bytes: the file may have grown since its check."""
    data = bytearray()
    while len(data) < limit and (chunk := os.read(fd, min(_CHUNK, limit - len(data)))):
        data += chunk
    return bytes(data)


def _replace_content(fd: int, data: bytes) -> None:
    os.ftruncate(fd, 0)
    view = memoryview(data)
    offset = 0
    while offset < len(view):
        offset += os.pwrite(fd, view[offset:], offset)


def _walk_dir(
    fd: int, prefix: str, depth: int, max_depth: int, skip: frozenset[str], hidden: frozenset[str]
) -> Iterator[Entry]:
    with os.scandir(fd) as scan:
        names = sorted(item.name for item in scan)
    for name in names:
        if prefix + name in hidden:
            continue
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:  # removed meanwhile
            continue
        yield _entry(fd, prefix + name, info, depth=depth)
        if not stat.S_ISDIR(info.st_mode) or depth >= max_depth or name in skip:
            continue
        try:
            sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError:  # swapped for a symlink or removed meanwhile: not entered
            continue
        with _closing(sub):
            yield from _walk_dir(sub, f"{prefix}{name}/", depth + 1, max_depth, skip, hidden)


def _entry(dir_fd: int, path: str, info: os.stat_result, *, depth: int) -> Entry:
    mode, name = info.st_mode, path.rpartition("/")[2]
    kind: EntryKind = "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"
    target = _readlink(dir_fd, name) if stat.S_ISLNK(mode) else None
    return Entry(
        path=path,
        name=name,
        kind="symlink" if target is not None else kind,
        size=info.st_size,
        depth=depth,
        target=target,
        dir_fd=dir_fd,
    )


def _readlink(dir_fd: int, name: str) -> str:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return "?"


def _outside(path: str, root: Path) -> ToolError:
    absolute = path.startswith("/")
    relative = posixpath.relpath(path, root) if absolute else posixpath.normpath(path)
    return ToolError(
        f"{path!r} {'is an absolute path' if absolute else 'uses ..'}: the file tools take "
        "only paths relative to the workspace root, without '..', and cannot reach anything "
        "outside the workspace.",
        hint=f"Give a path inside the workspace, relative to its root, {_EXAMPLE}."
        if relative.startswith("..")
        else f"Write it as {relative!r}.",
    )


def _refusal(dir_fd: int, parts: Parts, index: int, exc: OSError) -> ToolError:
    """Explain why component `index` of `parts`, in `dir_fd`, could not be opened."""
    try:
        mode = os.stat(parts[index], dir_fd=dir_fd, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return _missing(dir_fd, parts, index)
    except OSError:
        mode = 0
    shown, prefix = "/".join(parts), "/".join(parts[: index + 1])
    if stat.S_ISLNK(mode):
        return _symlink(dir_fd, parts, index)
    if exc.errno == errno.EISDIR:
        return _not_a_file(parts, stat.S_IFDIR)
    if prefix == shown and (exc.errno == errno.ENXIO or (mode and not stat.S_ISREG(mode))):
        return _not_a_file(parts, mode or stat.S_IFIFO)
    if mode and not stat.S_ISDIR(mode):
        return ToolError(
            f"{shown!r} cannot be reached: {prefix!r} is a file, not a directory.",
            hint=f"Check the path; list_dir on {posixpath.dirname(prefix) or '.'!r} shows it.",
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ToolError(
            f"{shown!r} cannot be opened: permission denied on {prefix!r}.",
            hint="The file tools cannot read it; pick another file, or look at its "
            "permissions with `ls -l` in bash.",
        )
    return ToolError(
        f"{shown!r} cannot be opened: {exc.strerror}.",
        hint=f"Check the path; list_dir on {posixpath.dirname(prefix) or '.'!r} shows what "
        "is there.",
    )


def _not_a_file(parts: Parts, mode: int) -> ToolError:
    what = "a directory" if stat.S_ISDIR(mode) else "a device, socket or pipe"
    return ToolError(
        f"{'/'.join(parts)!r} is {what}, not a regular file; the file tools handle files only.",
        hint="Use list_dir to see what a directory contains, then name a file in it.",
    )


def _symlink(dir_fd: int, parts: Parts, index: int) -> ToolError:
    shown, prefix = "/".join(parts), "/".join(parts[: index + 1])
    where = "is" if prefix == shown else f"goes through {prefix!r}, which is"
    return ToolError(
        f"{shown!r} {where} a symbolic link (-> {_readlink(dir_fd, parts[index])!r}) and is "
        "refused: the file tools never follow symbolic links, inside the workspace or out.",
        hint="Use the path of the real file inside the workspace; list_dir shows links "
        "and where they point.",
    )


def _missing(dir_fd: int, parts: Parts, index: int) -> ToolError:
    shown, prefix = "/".join(parts), "/".join(parts[: index + 1])
    parent = posixpath.dirname(prefix) or "."
    gap = "" if prefix == shown else f" (there is no {prefix!r})"
    try:
        siblings = os.listdir(dir_fd)
    except OSError:
        siblings = []
    guess = did_you_mean(
        parts[index], siblings, show=lambda name: posixpath.join(parent, name).removeprefix("./")
    )
    look = f"Use list_dir on {parent!r} to see what is there, or search to find files by content."
    return ToolError(
        f"{shown!r} does not exist in the workspace{gap}.",
        hint=f"{guess} {look}" if guess else look,
    )
