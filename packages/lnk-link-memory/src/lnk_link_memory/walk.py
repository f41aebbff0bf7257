"""The tree walk: every document of a folder, found whatever the folder holds.

The walk keeps its own stack instead of recursing, so a folder nested a thousand levels deep is
one more entry left out (past `FOLDER_DEPTH`), never an error that stops the scan. It holds one
directory handle per level it is inside, opened with O_NOFOLLOW one name at a time, so a link
swapped in anywhere is refused rather than followed. A folder seen before (a bind mount of its
own parent, a second mount of the same folder) is read once: each is known by (device, inode).
Only regular files are ever opened; a FIFO, socket or device is left out by what `stat` says
without opening it. Whatever goes wrong in one place (a folder it may not read, a name that isn't
UTF-8, a file gone mid-walk) is said for that place, and the walk goes on with the rest.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field

from lnk_link_memory.folder import (
    CONVERSATION,
    DIR_FLAGS,
    Folder,
    Found,
    Kind,
    Layout,
    Skipped,
    Source,
    signature,
    supported,
)
from lnk_link_memory.limits import FOLDER_DEPTH, MAX_FILE_BYTES

LINK = "a symbolic link: memory never follows one"

KindOf = Callable[[str], Kind]


@dataclass
class _Level:
    """A folder the walk is inside: its handle, its names under the source, what is left to look at."""

    fd: int
    parts: tuple[str, ...]
    entries: list[tuple[str, bool, bool]] = field(default_factory=list)


def walk(folder: Folder) -> Iterator[Found | Skipped]:
    """Every document memory indexes, in path order, and every path left out with why."""
    for source in folder.sources:
        if source.layout is not Layout.READ_ONLY:
            yield from _source(source, lambda path, s=source: folder.kind_of(path, s))  # type: ignore[misc]


def _source(source: Source, kind_of: KindOf) -> Iterator[Found | Skipped]:
    try:
        root = os.open(source.root, DIR_FLAGS)
    except FileNotFoundError:
        return  # not there yet: nothing to index
    except OSError as exc:
        yield Skipped(source.prefix or ".", _unreadable(exc), unknown=True)
        return
    if source.layout is Layout.CONVERSATIONS:
        try:
            yield from _conversations(source, root, kind_of)
        finally:
            os.close(root)
        return
    yield from _tree(source, root, kind_of)


def _tree(source: Source, root: int, kind_of: KindOf) -> Iterator[Found | Skipped]:
    stack = [_Level(root, ())]
    try:
        seen = {_identity(root)}
        problem = _list(stack[-1])
        if problem is not None:
            yield Skipped(source.prefix or ".", problem, unknown=True)
            return
        while stack:
            level = stack[-1]
            if not level.entries:
                os.close(stack.pop().fd)
                continue
            name, is_link, is_dir = level.entries.pop()
            path = source.prefix + "/".join((*level.parts, name))
            if not _utf8(name):
                yield Skipped(_shown(path), "its name isn't valid UTF-8: rename it to have memory read it")
            elif is_link:
                yield Skipped(path, LINK)
            elif is_dir:
                child = yield from _enter(level, name, path, seen)
                if child is not None:
                    stack.append(child)
            elif supported(name):
                found = _found(level.fd, name, path, kind_of)
                if found is not None:
                    yield found
    finally:
        for level in stack:
            os.close(level.fd)


def _enter(level: _Level, name: str, path: str, seen: set[tuple[int, int]]) -> Generator[Skipped, None, _Level | None]:
    """Open a folder to walk into it; None (and why, yielded) when it is left out."""
    if len(level.parts) + 1 > FOLDER_DEPTH:
        yield Skipped(path, f"more than {FOLDER_DEPTH} folders deep: left out")
        return None
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=level.fd)
    except FileNotFoundError:
        return None  # gone since it was listed: nothing there
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            yield Skipped(path, LINK if exc.errno == errno.ELOOP else "no longer a folder")
        else:
            yield Skipped(path, _unreadable(exc), unknown=True)
        return None
    identity = _identity(fd)
    if identity in seen:
        os.close(fd)
        yield Skipped(path, "a folder already read under another path (a loop or a second mount): read once")
        return None
    seen.add(identity)
    child = _Level(fd, (*level.parts, name))
    problem = _list(child)
    if problem is not None:
        os.close(fd)
        yield Skipped(path, problem, unknown=True)
        return None
    return child


def _list(level: _Level) -> str | None:
    """Fill in a folder's entries (reversed: popped in name order); why not, when it can't be read."""
    entries: list[tuple[str, bool, bool]] = []
    try:
        with os.scandir(level.fd) as listing:
            for entry in listing:
                if entry.name.startswith("."):
                    continue
                try:
                    entries.append((entry.name, entry.is_symlink(), entry.is_dir(follow_symlinks=False)))
                except OSError:
                    continue  # gone while it was listed
    except OSError as exc:
        return _unreadable(exc)
    entries.sort(reverse=True)
    level.entries = entries
    return None


def _conversations(source: Source, fd: int, kind_of: KindOf) -> Iterator[Found | Skipped]:
    """Only <root>/<conversation>/conversation.md, each conversation's folder on its own."""
    level = _Level(fd, ())
    problem = _list(level)
    if problem is not None:
        yield Skipped(source.prefix, problem, unknown=True)
        return
    for name, is_link, _ in reversed(level.entries):
        path = f"{source.prefix}{name}"
        if not _utf8(name):
            yield Skipped(_shown(path), "its name isn't valid UTF-8: rename it to have memory read it")
            continue
        if is_link:
            yield Skipped(path, LINK)
            continue
        try:
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                yield Skipped(path, _unreadable(exc), unknown=True)
            continue
        try:
            found = _found(child, CONVERSATION, f"{path}/{CONVERSATION}", kind_of)
        finally:
            os.close(child)
        if found is not None:
            yield found


def _found(fd: int, name: str, path: str, kind_of: KindOf) -> Found | Skipped | None:
    """A document as `stat` sees it, never opened here; None when it is gone."""
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return Skipped(path, f"can't be read ({exc.strerror})")
    if stat.S_ISLNK(info.st_mode):
        return Skipped(path, LINK)
    if not stat.S_ISREG(info.st_mode):
        return Skipped(path, "not a regular file (a folder, FIFO, socket or device): never opened")
    if info.st_size > MAX_FILE_BYTES:
        return Skipped(path, f"larger than {MAX_FILE_BYTES // 2**20} MiB: left out, not half read")
    return Found(path, kind_of(path), info.st_size, info.st_mtime, signature(info))


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _unreadable(exc: OSError) -> str:
    return f"a folder memory can't read ({exc.strerror}): what it held before is kept"


def _utf8(name: str) -> bool:
    """Names come decoded with surrogate escapes: one that isn't UTF-8 can't be stored or shown as is."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(path: str) -> str:
    """A path with its undecodable bytes written as \\xNN, to say which one was left out."""
    return os.fsencode(path).decode("utf-8", errors="backslashreplace")
