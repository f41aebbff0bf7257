"""The stream that carries an agent between machines: `lnk agent send | lnk agent receive`.

One stream, written once and read once, never seeked, so it crosses a pipe or an SSH connection:

    {"lnk_move": 2, "grants": {...}}\\n      the first line: the format, and the agent's grants
    a POSIX tar stream:
      lnk-move-2.json                        the manifest, always the first member
      settings/...                           settings.toml, keys.json, channels/<channel>/<path>
      harness/...                            the harness's state, as its adapter names it
      chats/...                              the conversations the harness wrote
      scheduler/...                          Link Scheduler's state: what is due and when
      files/...                              the files folder (Home)
      lnk-move-2.end                         the last member: how many files and bytes came

The format number is in the manifest's name, so a receive of another format finds no manifest it
knows and stops before anything is replaced: formats must match, not versions (a dev build has no
release). The end member makes a stream cut at a member's edge as clear as one cut mid-file.

Only folders and regular files are written and read. A symbolic link is never followed while
writing (it is left out, and said) and refused while reading; a hard link is read and carried as a
regular file. A member's name is one strict relative path under one of the five parts, so nothing
unpacks outside the folder it is unpacked into. Reading unpacks aside, into folders the caller
gives (on the same file systems as where the parts go), so a bad stream changes nothing.

tarfile encodes and decodes each header (pax, for names of any length); the bytes of files go
around it, and around Python: sendfile(2) from each file into the pipe, splice(2) from the pipe
into each file, through a pipe widened to a mebibyte so each end wakes the other a sixteenth as
often. A move is I/O, and tarfile's stream copies every byte several times over. A stream that
is not a pipe (a file, a socket) is read through one buffer instead.

Nothing here flushes to the disk: a move writes hundreds of files, and a flush each is a storm.
The receiving side flushes its file systems once, before it says the agent arrived for good
(`lnk.moves.settle`).
"""

from __future__ import annotations

import errno
import fcntl
import io
import os
import stat
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any

from pydantic import BaseModel, Field, ValidationError

from link_plugin.errors import LinkError
from link_plugin.model import Model
from lnk.trees import relative_path, walk

FORMAT = 2
"""The stream's format. Another number is another stream: a receive reads only its own."""

MANIFEST = f"lnk-move-{FORMAT}.json"
END = f"lnk-move-{FORMAT}.end"

PARTS = ("settings", "harness", "chats", "scheduler", "files")
"""Every member but the manifest and the end lives under one of these."""

LINE_MAX = 1 << 20
"""The first line is a few kilobytes of grants; more is not a stream of ours."""

PIPE = 1 << 20
"""The pipe's size each end asks for: a mebibyte, the most a user may ask of Linux by default."""

CHUNK = 1 << 16
"""Headers are read this much at a time; what of a file comes with them is written from the buffer."""

BUFFER = 1 << 20
"""A file's bytes from a stream that is not a pipe: a mebibyte at a time through one buffer."""


class MoveError(LinkError):
    """A stream that can't be taken as it is; nothing on the receiving side was changed."""


class Header(Model):
    """The first line."""

    lnk_move: int
    grants: dict[str, Any] = Field(default_factory=dict)
    """The agent's grants (sandbox.toml) on the machine that wrote the stream."""


class AgentRef(Model):
    name: str
    id: str = Field(pattern=r"^[a-z0-9]{12}$")
    owner: str


class Manifest(Model):
    """lnk-move-2.json: what the stream carries, read before anything of it is unpacked."""

    format: int = FORMAT
    agent: AgentRef
    harness: str
    harness_state: list[str]
    """The paths of the harness's home that are its state, as its adapter named them."""
    channels: dict[str, list[str]] = Field(default_factory=dict)
    """Each linked channel's paths of its folder, as its plugin named them on the sending machine."""
    machine: str
    """The machine the agent leaves."""
    lnk: str
    """The release of lnk that wrote it: said in errors, never compared."""
    sent: datetime = Field(default_factory=lambda: datetime.now(UTC))


class End(Model):
    files: int
    bytes: int


def _usage() -> str:
    return "lnk agent send NAME | lnk agent receive (or | ssh HOST lnk agent receive) moves an agent."


# --- names ----------------------------------------------------------------------------------


def member_name(part: str, relative: PurePosixPath) -> str:
    return str(PurePosixPath(part) / relative)


def checked_name(name: str) -> tuple[str, PurePosixPath]:
    """A member's part and its path under it, or an error: one strict parser for every name."""
    path = PurePosixPath(name)
    parts = path.parts
    if path.is_absolute() or not parts or any(p in ("", ".", "..") for p in parts) or "\\" in name:
        raise MoveError(
            f"The stream names {name!r}, a path that leaves the folder it unpacks into.",
            "Nothing here was changed. The stream was not written by lnk agent send: don't use it.",
        )
    if parts[0] not in PARTS:
        raise MoveError(f"The stream holds {name!r}, which no part of an agent is.", "Nothing here was changed.")
    return parts[0], PurePosixPath(*parts[1:])


# --- writing ----------------------------------------------------------------------------------


@dataclass
class Source:
    """One part's folder, and the paths in it that go (["."] for all of it)."""

    part: str
    root: Path
    paths: list[str] = field(default_factory=lambda: ["."])


@dataclass
class Written:
    files: int = 0
    bytes: int = 0
    links_left: list[str] = field(default_factory=list)
    """Symbolic links met and left out, never followed."""


BLOCK = tarfile.BLOCKSIZE
RECORD = tarfile.RECORDSIZE


def widen(fd: int) -> bool:
    """Ask for a pipe of PIPE bytes when `fd` is a pipe; whether it is one. A pipe that stays at
    Linux's 64 KiB (a limit set lower) still carries the stream, only with more wake-ups."""
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        return False
    try:
        if fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) < PIPE:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE)
    except OSError:
        pass
    return True


class _Output:
    """The stream's writing end: headers as tarfile encodes them, a file's bytes by sendfile(2)
    straight from the file to the pipe, never through Python's buffers."""

    def __init__(self, out: IO[bytes]) -> None:
        out.flush()
        self.fd = out.fileno()
        self.size = 0
        widen(self.fd)

    def write(self, data: bytes) -> None:
        _write_all(self.fd, data)
        self.size += len(data)

    def pad(self, to: int = BLOCK) -> None:
        if self.size % to:
            self.write(bytes(to - self.size % to))

    def member(self, info: tarfile.TarInfo) -> None:
        self.write(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))

    def file(self, fd: int, size: int, name: str) -> None:
        sent = 0
        while sent < size:
            done = os.sendfile(self.fd, fd, sent, min(size - sent, 1 << 30))
            if done == 0:
                raise MoveError(f"{name} got shorter while it was sent.", "Nothing of it is stopped: send it again.")
            sent += done
        self.size += size
        self.pad()


def _add_json(out: _Output, name: str, model: BaseModel) -> None:
    data = model.model_dump_json().encode()
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o600
    info.mtime = int(datetime.now(UTC).timestamp())
    out.member(info)
    out.write(data)
    out.pad()


def _add_file(out: _Output, name: str, path: Path, written: Written) -> None:
    # Opened without following a link put there since it was walked; its size is what it is now.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return
        member = tarfile.TarInfo(name)
        member.type = tarfile.REGTYPE  # a hard link too: carried as the regular file it is
        member.size = info.st_size
        member.mode = stat.S_IMODE(info.st_mode)
        member.mtime = int(info.st_mtime)
        out.member(member)
        out.file(fd, info.st_size, name)
    finally:
        os.close(fd)
    written.files += 1
    written.bytes += info.st_size


def write_stream(out: IO[bytes], header: Header, manifest: Manifest, sources: list[Source]) -> Written:
    """The first line, then the tar stream: the manifest, every source's paths, the end."""
    written = Written()
    output = _Output(out)
    output.write(header.model_dump_json().encode() + b"\n")
    output.size = 0  # the tar stream's, from here: its records are counted from its start
    _add_json(output, MANIFEST, manifest)
    for source in sources:
        for text in source.paths:
            for relative, info in walk(source.root, relative_path(text), written.links_left):
                name = member_name(source.part, relative)
                if stat.S_ISDIR(info.st_mode):
                    member = tarfile.TarInfo(name)
                    member.type = tarfile.DIRTYPE
                    member.mode = stat.S_IMODE(info.st_mode) | 0o700
                    member.mtime = int(info.st_mtime)
                    output.member(member)
                else:
                    _add_file(output, name, source.root / relative, written)
    _add_json(output, END, End(files=written.files, bytes=written.bytes))
    output.write(bytes(2 * BLOCK))  # the end of a tar archive, then its last record filled, as tar does
    output.pad(RECORD)
    return written


# --- reading ----------------------------------------------------------------------------------


class Reader:
    """The stream's reading end, on a descriptor: headers through a buffer of CHUNK bytes; a file's
    bytes spliced straight from the pipe into the file, or through one buffer from anything else."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.raw = io.FileIO(fd, "rb", closefd=False)
        self.pipe = widen(fd)
        self.pending = bytearray()
        self._buffer: memoryview | None = None

    def _more(self, want: int) -> None:
        data = self.raw.read(max(want, CHUNK))
        if not data:
            raise _cut_short()
        self.pending += data

    def readline(self, limit: int) -> bytes:
        """Up to and with the first newline, or `limit` bytes, or what came before the end."""
        while b"\n" not in self.pending and len(self.pending) < limit:
            data = self.raw.read(CHUNK)
            if not data:
                break
            self.pending += data
        end = self.pending.find(b"\n", 0, limit)
        end = min(len(self.pending), limit) if end < 0 else end + 1
        line = bytes(self.pending[:end])
        del self.pending[:end]
        return line

    def exactly(self, size: int) -> bytes:
        while len(self.pending) < size:
            self._more(size - len(self.pending))
        data = bytes(self.pending[:size])
        del self.pending[:size]
        return data

    def copy(self, fd: int, size: int) -> None:
        """The next `size` bytes of the stream into the file open at `fd`."""
        if self.pending:
            first = min(size, len(self.pending))
            _write_all(fd, self.pending[:first])
            del self.pending[:first]
            size -= first
        while size and self.pipe:
            try:
                done = os.splice(self.fd, fd, min(size, PIPE))
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                self.pipe = False  # a file system that takes no splice: through the buffer, then
                break
            if not done:
                raise _cut_short()
            size -= done
        while size:
            if self._buffer is None:
                self._buffer = memoryview(bytearray(BUFFER))
            got = self.raw.readinto(self._buffer[: min(size, BUFFER)])
            if not got:
                raise _cut_short()
            _write_all(fd, self._buffer[:got])
            size -= got


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_header(stream: Reader) -> Header:
    line = stream.readline(LINE_MAX)
    if not line:
        raise MoveError("Nothing came on stdin: no agent to receive.", _usage())
    if not line.endswith(b"\n"):
        raise MoveError("What came on stdin is not a move's stream (its first line never ends).", _usage())
    try:
        header = Header.model_validate_json(line)
    except ValidationError:
        raise MoveError("What came on stdin is not a move's stream: its first line isn't one.", _usage()) from None
    if header.lnk_move != FORMAT:
        raise MoveError(_other_format(header.lnk_move), _upgrade_hint())
    return header


def _other_format(found: int | str) -> str:
    return f"The stream is a move of format {found}; this lnk receives format {FORMAT}. Nothing here was changed."


def _upgrade_hint() -> str:
    return "The formats must match: upgrade lnk where it is older (lnk upgrade), then send again."


def _cut_short() -> MoveError:
    return MoveError("The stream ends too soon: it was cut short.", "Nothing here was changed; send it again.")


def _padding(size: int) -> int:
    return -size % BLOCK


def _pax(data: bytes) -> dict[str, str]:
    """A pax extended header's records: "<length> <key>=<value>\\n", each length counting itself."""
    records: dict[str, str] = {}
    at = 0
    while at < len(data):
        space = data.find(b" ", at)
        if space < 0 or not data[at:space].isdigit():
            raise MoveError("The stream holds an extended header that can't be read.", "Nothing here was changed.")
        end = at + int(data[at:space])
        key, _, value = data[space + 1 : end - 1].partition(b"=")
        records[key.decode()] = value.decode("utf-8", "surrogateescape")
        at = end
    return records


def _next_member(stream: Reader) -> tarfile.TarInfo | None:
    """The next member's header (with its pax records applied), or None at the archive's end."""
    block = stream.exactly(BLOCK)
    if not any(block):
        return None
    try:
        info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
    except tarfile.HeaderError as exc:
        raise MoveError(f"The stream is broken ({exc}).", "Nothing here was changed; send it again.") from None
    if info.type != tarfile.XHDTYPE:
        return info
    records = _pax(stream.exactly(info.size + _padding(info.size))[: info.size])
    member = _next_member(stream)
    if member is None or member.type == tarfile.XHDTYPE:
        raise MoveError("The stream's extended header describes nothing.", "Nothing here was changed.")
    if "path" in records:
        member.name = records["path"]
    if "linkpath" in records:
        member.linkname = records["linkpath"]
    if "size" in records:
        member.size = int(records["size"])
    return member


def _refuse_kind(member: tarfile.TarInfo) -> None:
    if member.issym() or member.islnk():
        kind = "symbolic link" if member.issym() else "link to another member"
        raise MoveError(
            f"The stream holds a {kind} at {member.name!r} (to {member.linkname!r}): a move carries none.",
            "Nothing here was changed. lnk agent send never writes links: this stream came from elsewhere.",
        )
    if not (member.isreg() or member.isdir()):
        raise MoveError(f"The stream holds {member.name!r}, neither a file nor a folder.", "Nothing here was changed.")


def _small(stream: Reader, member: tarfile.TarInfo) -> bytes:
    if not member.isreg() or member.size > LINE_MAX:
        raise MoveError(f"The stream's {member.name} is not a small file.", "Nothing here was changed.")
    return stream.exactly(member.size + _padding(member.size))[: member.size]


def _read_manifest(stream: Reader) -> Manifest:
    first = _next_member(stream)
    if first is None:
        raise _cut_short()
    if first.name != MANIFEST:
        if first.name.startswith("lnk-move-") and first.name.endswith(".json"):
            raise MoveError(_other_format(first.name.removeprefix("lnk-move-").removesuffix(".json")), _upgrade_hint())
        raise MoveError(f"The stream starts with {first.name!r}, not a move's manifest.", _usage())
    try:
        manifest = Manifest.model_validate_json(_small(stream, first))
    except ValidationError as exc:
        raise MoveError(f"The stream's manifest can't be read: {exc.errors()[0]['msg']}.", _usage()) from None
    if manifest.format != FORMAT:
        raise MoveError(_other_format(manifest.format), _upgrade_hint())
    return manifest


def _unpack_file(stream: Reader, member: tarfile.TarInfo, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # Into folders made a moment ago, that only this process writes; O_NOFOLLOW anyway.
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        stream.copy(fd, member.size)
        os.fchmod(fd, (member.mode & 0o777) | 0o600)
        os.utime(fd, (member.mtime, member.mtime))
    finally:
        os.close(fd)
    stream.exactly(_padding(member.size))


@dataclass
class Unpacked:
    manifest: Manifest
    end: End
    folders: dict[str, Path]
    """Each part's folder, as given: what came of it is there."""


def read_stream(stream: Reader, folders: Callable[[Manifest], dict[str, Path]]) -> Unpacked:
    """Unpack every part into its folder (`folders` chooses them from the manifest, and may refuse
    it by raising); the end must come, with as many files and bytes as came, then the archive's end."""
    manifest = _read_manifest(stream)
    places = folders(manifest)
    files = size = 0
    end: End | None = None
    while (member := _next_member(stream)) is not None:
        if end is not None:
            raise MoveError(f"The stream goes on after its end ({member.name!r}).", "Nothing here was changed.")
        if member.name == END:
            try:
                end = End.model_validate_json(_small(stream, member))
            except ValidationError:
                raise MoveError("The stream's end can't be read.", "Nothing here was changed.") from None
            continue
        _refuse_kind(member)
        part, relative = checked_name(member.name)
        target = places[part] / relative
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        _unpack_file(stream, member, target)
        files += 1
        size += member.size
    if end is None:
        raise _cut_short()
    if (end.files, end.bytes) != (files, size):
        raise MoveError(
            f"The stream says {end.files} files ({end.bytes} bytes) and carried {files} ({size} bytes).",
            "Nothing here was changed; send it again.",
        )
    return Unpacked(manifest=manifest, end=end, folders=places)
