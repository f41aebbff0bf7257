"""remember: one line of notes.md added, changed or forgotten, never past the notes limit.

The whole file is written in one step: a new file beside it, renamed over it through the folder's
handle, never through a link. The folder's handle is locked while a writer reads and replaces the
file, so concurrent writers (other sessions, other processes) take turns and lose nothing.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import fcntl
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_BULLET = ("- ", "* ", "+ ")


class NotesError(Exception):
    """What remember couldn't do, and what to do instead."""


@dataclass(frozen=True)
class Written:
    done: str
    line: str | None
    size: int
    room: int


def _note(text: str, what: str) -> str:
    text = text.strip()
    if not text:
        raise NotesError(f"{what} is empty: give the note's text.")
    if "\n" in text or "\r" in text:
        raise NotesError(f"{what} holds a line break: a note is one line. Give each note on its own.")
    return text


def _line(text: str, bullet: str = "- ") -> str:
    return text if text.startswith(_BULLET) or text.startswith("#") else bullet + text


def _bare(line: str) -> str:
    stripped = line.strip()
    for bullet in _BULLET:
        if stripped.startswith(bullet):
            return stripped[len(bullet) :].strip()
    return stripped


class Notes:
    def __init__(self, path: Path, limit: int) -> None:
        self.path = path
        self.limit = limit

    def add(self, text: str) -> Written:
        note = _line(_note(text, "add"))
        return self._edit(lambda lines: ([*lines, note], "added", note))

    def change(self, old: str, new: str) -> Written:
        wanted, replacement = _note(old, "change"), _note(new, "to")

        def edit(lines: list[str]) -> tuple[list[str], str, str | None]:
            index = self._one(lines, wanted)
            bullet = next((b for b in _BULLET if lines[index].lstrip().startswith(b)), "- ")
            changed = _line(replacement, bullet)
            return [*lines[:index], changed, *lines[index + 1 :]], "changed", changed

        return self._edit(edit)

    def forget(self, text: str) -> Written:
        wanted = _note(text, "forget")

        def edit(lines: list[str]) -> tuple[list[str], str, str | None]:
            index = self._one(lines, wanted)
            return [*lines[:index], *lines[index + 1 :]], "forgot", lines[index]

        return self._edit(edit)

    def _one(self, lines: list[str], wanted: str) -> int:
        """The one line holding the text; a clear error naming the candidates otherwise."""
        needle = wanted.lower()
        holding = [i for i, line in enumerate(lines) if needle in line.lower()]
        exact = [i for i in holding if _bare(lines[i]).lower() == _bare(wanted).lower()]
        if len(holding) == 1 or len(exact) == 1:
            return exact[0] if len(exact) == 1 else holding[0]
        if holding:
            shown = "; ".join(f"line {i + 1}: {lines[i].strip()!r}" for i in holding[:10])
            raise NotesError(f"{wanted!r} is on {len(holding)} lines ({shown}). Give text only one of them holds.")
        notes = [line.strip() for line in lines if line.strip()]
        if not notes:
            raise NotesError(f"No line holds {wanted!r}: the notes are empty.")
        close = difflib.get_close_matches(wanted, notes, n=5, cutoff=0.0)
        raise NotesError(f"No line holds {wanted!r}. The closest: " + "; ".join(repr(c) for c in close) + ".")

    def _edit(self, edit: Callable[[list[str]], tuple[list[str], str, str | None]]) -> Written:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        folder = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)
            before, mode = self._read(folder)
            lines, done, line = edit(before.decode("utf-8", errors="replace").splitlines())
            after = ("\n".join(lines) + "\n").encode() if lines else b""
            if len(after) > self.limit and len(after) > len(before):
                room = max(0, self.limit - len(before))
                raise NotesError(
                    f"That would make the notes {len(after):,} bytes, past their limit of {self.limit:,} "
                    f"([tool.memory] notes); {room:,} bytes are left. Forget or shorten a note first."
                )
            self._replace(folder, after, mode)
        finally:
            os.close(folder)
        return Written(done, line, len(after), max(0, self.limit - len(after)))

    def _read(self, folder: int) -> tuple[bytes, int]:
        try:
            handle = os.open(self.path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
        except FileNotFoundError:
            return b"", 0o644
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise NotesError(f"{self.path} is a symbolic link: remember never writes through one.") from exc
            raise NotesError(f"{self.path} can't be read ({exc.strerror}).") from exc
        with os.fdopen(handle, "rb") as stream:
            mode = os.fstat(stream.fileno()).st_mode & 0o777
            return stream.read(), mode

    def _replace(self, folder: int, data: bytes, mode: int) -> None:
        temporary = f".{self.path.name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        handle = os.open(temporary, flags, mode, dir_fd=folder)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
            os.rename(temporary, self.path.name, src_dir_fd=folder, dst_dir_fd=folder)
            os.fsync(folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=folder)
            raise
