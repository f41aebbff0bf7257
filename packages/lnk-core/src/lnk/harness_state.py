"""The harness's state as one archive, `.lnk-backup/<harness>.tar` in the agent's files folder.

The harness's state is what its adapter names in its home (`state`: "." for all of it) and the
agent's conversations (`chats/`), which the harness alone writes: Link Harness keeps all of its
state there and none in its home. The archive holds them as

    chats/...          the agent's chats/
    home/<path>...     each path of the harness's home its adapter names

Beside it, `.lnk-backup/scheduler.tar` holds what Link Scheduler has due for the agent (its
`Scheduler/` folder, as `scheduler/...`): a schedule is the agent's, and comes back with it.

A backup pushes them like any other file, so a bucket knows folders and nothing about harnesses.

Packing takes folders and regular files only: a link is never followed (it is left out), and a
hard link is a regular file like any other. Unpacking happens aside first, in a folder of the
agent's own: every member is checked (a folder or a regular file, a relative name with no `..`,
under chats/ or home/) and read whole before anything in place changes, so a broken or truncated
archive leaves the state as it was. Then each part is replaced wholly, by rename: what the
harness wrote since the backup is gone, and nothing outside its state is touched.
"""

from __future__ import annotations

import os
import stat
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

from link_plugin.errors import LinkError
from lnk.agents import Agent
from lnk.trees import HERE, relative_path, walk

FOLDER = ".lnk-backup"
CHATS = "chats"
HOME = "home"
SCHEDULER = "scheduler"
CHUNK = 1 << 20

Part = tuple[Path, str, list[PurePosixPath]]
"""A folder, the name its members go under in an archive, and the paths of it that go."""


def archive_path(agent: Agent, harness: str) -> Path:
    return agent.folder.home / FOLDER / f"{harness}.tar"


def schedules_path(agent: Agent) -> Path:
    return agent.folder.home / FOLDER / f"{SCHEDULER}.tar"


def _add(tar: tarfile.TarFile, path: Path, name: str) -> None:
    info = tarfile.TarInfo(name)
    found = path.lstat()
    info.mtime = int(found.st_mtime)
    info.mode = found.st_mode & 0o777
    if stat.S_ISDIR(found.st_mode):
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
        return
    info.size = found.st_size
    with path.open("rb") as given:
        tar.addfile(info, given)


def pack(agent: Agent, harness: str, home: Path, paths: list[str]) -> Path:
    """Write the harness's state archive (whole, by rename) and say where it is."""
    parts: list[Part] = [(agent.folder.chats, CHATS, [HERE]), (home, HOME, _state_paths(paths))]
    return _write(archive_path(agent, harness), parts)


def pack_schedules(agent: Agent) -> Path:
    """Write what Link Scheduler has due for the agent (an empty archive when nothing is), so a
    schedule cancelled since the last backup doesn't come back with the next restore."""
    return _write(schedules_path(agent), [(agent.folder.scheduler, SCHEDULER, [HERE])])


def _write(target: Path, parts: list[Part]) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        with tarfile.open(scratch, "w", format=tarfile.PAX_FORMAT) as tar:
            links: list[str] = []  # left out: a link is never followed, nor carried
            for root, part, starts in parts:
                for start in starts:
                    for relative, _ in walk(root, start, links):
                        _add(tar, root / relative, str(PurePosixPath(part, relative)))
        os.chmod(scratch, 0o600)
        os.replace(scratch, target)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
    return target


def _state_paths(paths: list[str]) -> list[PurePosixPath]:
    return [relative_path(path) for path in paths]


def _broken(archive: Path, why: str) -> LinkError:
    what = "What Link Scheduler had due" if archive.name == f"{SCHEDULER}.tar" else "The harness's state"
    return LinkError(
        f"{what} in {archive} can't be unpacked: {why}",
        "Nothing was changed: the state is as it was. Take the archive from another backup.",
    )


def _member_path(archive: Path, member: tarfile.TarInfo, parts: tuple[str, ...]) -> PurePosixPath:
    path = PurePosixPath(member.name)
    if path.is_absolute() or ".." in path.parts or not path.parts or path.parts[0] not in parts:
        raise _broken(archive, f"it holds {member.name!r}, which would land outside the state")
    if not (member.isdir() or member.isreg()):
        raise _broken(archive, f"it holds {member.name!r}, which is neither a folder nor a regular file")
    return path


def _ended(archive: Path, offset: int) -> None:
    """The archive goes on to its end: tarfile takes a stream cut at (or inside) a member's header
    for the archive's end, so a tar counts as whole only with its two zero blocks where it stopped."""
    with archive.open("rb") as raw:
        raw.seek(offset)
        if raw.read(2 * tarfile.BLOCKSIZE) != bytes(2 * tarfile.BLOCKSIZE):
            raise _broken(archive, "it was cut short")


def _unpack(archive: Path, into: Path, parts: tuple[str, ...] = (CHATS, HOME)) -> None:
    try:
        with tarfile.open(archive, "r:") as tar:
            for member in tar:
                path = into / _member_path(archive, member, parts)
                if member.isdir():
                    path.mkdir(parents=True, exist_ok=True, mode=0o700)
                    continue
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                source = tar.extractfile(member)
                assert source is not None
                written = 0
                with path.open("wb") as out:
                    while chunk := source.read(CHUNK):
                        out.write(chunk)
                        written += len(chunk)
                if written != member.size:
                    raise _broken(archive, f"{member.name} ends early")
                path.chmod(0o700 if member.mode & 0o100 else 0o600)
                os.utime(path, (member.mtime, member.mtime))
            _ended(archive, tar.offset)
    except (tarfile.TarError, EOFError) as exc:
        raise _broken(archive, str(exc) or type(exc).__name__) from None
    except OSError as exc:
        raise _broken(archive, exc.strerror or str(exc)) from None


def _replace(target: Path, new: Path, old: Path) -> None:
    """`target` becomes `new` (or goes, when `new` isn't there); what it was is moved to `old`."""
    if target.exists() or target.is_symlink():
        old.parent.mkdir(parents=True, exist_ok=True)
        os.replace(target, old)
    if new.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(new, target)


def restore(archive: Path, agent: Agent, home: Path, paths: list[str]) -> None:
    """Replace the harness's state wholly with the archive's; a broken archive changes nothing."""
    if not archive.is_file():
        raise LinkError(
            f"There is no harness state to go back to ({archive} isn't there)",
            "Run `lnk agent backup` first, or restore from the bucket that holds one.",
        )
    named = _state_paths(paths)
    with tempfile.TemporaryDirectory(prefix=".lnk-restore-", dir=agent.folder.root) as scratch:
        aside = Path(scratch)
        _unpack(archive, aside / "new")
        _replace(agent.folder.chats, aside / "new" / CHATS, aside / "old" / CHATS)
        if not agent.folder.chats.exists():
            agent.folder.chats.mkdir(parents=True)
        for relative in named:
            _replace(home / relative, aside / "new" / HOME / relative, aside / "old" / HOME / relative)
        home.mkdir(parents=True, exist_ok=True)


def restore_schedules(archive: Path, agent: Agent) -> None:
    """Replace what Link Scheduler has due for the agent wholly with the archive's; a broken archive
    changes nothing."""
    with tempfile.TemporaryDirectory(prefix=".lnk-restore-", dir=agent.folder.root) as scratch:
        aside = Path(scratch)
        _unpack(archive, aside / "new", (SCHEDULER,))
        _replace(agent.folder.scheduler, aside / "new" / SCHEDULER, aside / "old" / SCHEDULER)
