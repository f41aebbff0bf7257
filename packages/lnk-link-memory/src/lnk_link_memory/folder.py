"""The folder memory reads: which files, found and opened without ever following a symbolic link.

Every file is reached from its source's root through directory handles opened with O_NOFOLLOW,
one name at a time, so a link swapped in anywhere along the way is refused rather than followed.
A hard link is a regular file like any other and is read as one.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from link_plugin.layout import AgentFolder
from lnk_link_memory.limits import MAX_FILE_BYTES

TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".text"})
EXTRACTED_SUFFIXES = frozenset({".pdf", ".docx"})
CONVERSATION = "conversation.md"

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class Kind(StrEnum):
    DOCUMENT = "document"
    CONVERSATION = "conversation"
    NOTES = "notes"


class Layout(StrEnum):
    TREE = "tree"
    """Every document under the root, at any depth."""
    CONVERSATIONS = "conversations"
    """Only <root>/<conversation>/conversation.md."""
    READ_ONLY = "read-only"
    """Read by path, never indexed (skills)."""


@dataclass(frozen=True)
class Source:
    prefix: str
    """How paths under it begin ("memory/", "chats/", or "" for a plain folder)."""
    root: Path
    layout: Layout


class Refused(Exception):
    """A path memory won't open, and why, in words for whoever asked."""


class Missing(Refused):
    """A path naming nothing there."""


@dataclass(frozen=True)
class Found:
    path: str
    kind: Kind
    size: int
    mtime: float
    signature: str
    """Changes whenever the file may have: size, modification time, inode."""


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str
    unknown: bool = False
    """A folder that couldn't be read: what was indexed under it is kept, since it may well be there."""


@dataclass(frozen=True)
class Folder:
    """What one memory serves: its sources and its notes file."""

    sources: tuple[Source, ...]
    notes: str | None
    """The notes file's path as memory names it ("memory/notes.md"), or None when it writes none."""

    @classmethod
    def agent(cls, root: Path, notes: Path | None) -> Folder:
        agent = AgentFolder(root)
        sources = (
            Source("memory/", agent.memory, Layout.TREE),
            Source("chats/", agent.chats, Layout.CONVERSATIONS),
            Source("skills/", agent.home / "skills", Layout.READ_ONLY),
        )
        return cls(sources, _named(sources, notes))

    @classmethod
    def plain(cls, root: Path, notes: Path | None) -> Folder:
        sources = (Source("", root, Layout.TREE),)
        return cls(sources, _named(sources, notes))

    def locate(self, path: str) -> tuple[Source, tuple[str, ...]]:
        """The source and names under its root of a path as memory names it; refuses anything else."""
        clean = path.strip().removeprefix("./")
        pure = PurePosixPath(clean)
        if not clean or pure.is_absolute() or any(part in {"..", "."} for part in pure.parts):
            raise Refused(f"{path!r} is not a path inside memory: give one as search or list name it.")
        for source in sorted(self.sources, key=lambda s: -len(s.prefix)):
            if clean.startswith(source.prefix) and len(clean) > len(source.prefix):
                parts = PurePosixPath(clean[len(source.prefix) :]).parts
                if source.layout is Layout.CONVERSATIONS and (len(parts) != 2 or parts[1] != CONVERSATION):
                    raise Refused(f"{path!r}: of a conversation, memory reads only its {CONVERSATION}.")
                return source, parts
        prefixes = ", ".join(s.prefix for s in self.sources if s.prefix) or "the folder"
        raise Refused(f"{path!r} is not in memory: paths begin with {prefixes}.")

    def kind_of(self, path: str, source: Source) -> Kind:
        if path == self.notes:
            return Kind.NOTES
        return Kind.CONVERSATION if source.layout is Layout.CONVERSATIONS else Kind.DOCUMENT

    def find(self, path: str) -> Found | Skipped | None:
        """One path as a walk would find it, or None when nothing is there."""
        source, _ = self.locate(path)
        try:
            handle, info = self.open(path)
        except Missing:
            return None
        except Refused as exc:
            return Skipped(path, str(exc))
        os.close(handle)
        if info.st_size > MAX_FILE_BYTES:
            return Skipped(path, f"larger than {MAX_FILE_BYTES // 2**20} MiB: left out, not half read")
        return Found(path, self.kind_of(path, source), info.st_size, info.st_mtime, signature(info))

    def open(self, path: str) -> tuple[int, os.stat_result]:
        """An open handle on the file a path names, never through a link; the caller closes it."""
        source, parts = self.locate(path)
        fd = _open_dir(source.root)
        try:
            for part in parts[:-1]:
                parent, fd = fd, -1
                fd = _step(parent, part, path)
            try:
                handle = os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _refusal(exc, path) from exc
        finally:
            if fd >= 0:
                os.close(fd)
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            os.close(handle)
            raise Refused(f"{path} is not a document (a folder or a device).")
        return handle, info

    def read(self, path: str) -> tuple[bytes, os.stat_result]:
        handle, info = self.open(path)
        try:
            if info.st_size > MAX_FILE_BYTES:
                raise Refused(f"{path} is larger than {MAX_FILE_BYTES // 2**20} MiB: memory leaves it out.")
            with os.fdopen(handle, "rb", closefd=False) as stream:
                return stream.read(MAX_FILE_BYTES + 1), info
        finally:
            os.close(handle)


def signature(info: os.stat_result) -> str:
    """Changes whenever the file may have: its size, modification time and inode."""
    return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ino}"


def supported(name: str) -> bool:
    suffix = PurePosixPath(name).suffix.lower()
    return suffix in TEXT_SUFFIXES or suffix in EXTRACTED_SUFFIXES


def extracted(path: str) -> bool:
    return PurePosixPath(path).suffix.lower() in EXTRACTED_SUFFIXES


def _named(sources: tuple[Source, ...], notes: Path | None) -> str | None:
    """The notes file's path as memory names it, if it lies in an indexed source."""
    if notes is None:
        return None
    for source in sources:
        if source.layout is Layout.TREE and notes.parent == source.root:
            return source.prefix + notes.name
    return None


def _open_dir(root: Path) -> int:
    try:
        return os.open(root, DIR_FLAGS)
    except OSError as exc:
        raise _refusal(exc, str(root)) from exc


def _step(fd: int, name: str, path: str) -> int:
    """The folder `name` inside `fd`, which it closes."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise _refusal(exc, path) from exc
    finally:
        os.close(fd)


def _refusal(exc: OSError, path: str) -> Refused:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return Refused(f"{path} goes through a symbolic link, which memory never follows.")
    if exc.errno == errno.ENOENT:
        return Missing(f"{path} doesn't exist: search or list give the paths there are.")
    return Refused(f"{path} can't be read ({exc.strerror}).")
