"""Puts the fixture plugins on PATH for every test: lnk-mini and its shapes from the conformance kit
(lnk-older, an adapter from before `describe`, lnk-broken, lnk-wide, ...: link_conformance.mini),
a memory engine and a channel. The lnk-sandbox double is on PATH only where a test puts it (see
`sandbox`)."""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from link_conformance.mini.adapter import SHAPES

if TYPE_CHECKING:
    from world import World

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPTS = Path(sys.executable).parent


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Half again as many workers as cores (`-n auto`, pyproject): a test spends much of its time
    waiting on the agents it started, and with one worker per core the cores sit partly idle."""
    return max(2, (os.cpu_count() or 1) * 3 // 2)


def _wrap(folder: Path, name: str, script: str, extra: str = "") -> None:
    path = folder / name
    path.write_text(f'#!/bin/sh\n{extra}exec "{sys.executable}" "{FIXTURES / script}" "$@"\n')
    path.chmod(0o755)


def _bin() -> Path:
    """Only the fixture plugins: the folder of this Python holds every package's, which most tests
    must not find (a channel's, installed on first use)."""
    folder = Path(tempfile.mkdtemp(prefix="lnk-core-bin-"))
    for name in SHAPES:
        if not (SCRIPTS / name).exists():
            raise SystemExit(
                f"{name} is not in {SCRIPTS}: the conformance kit was installed before it had console "
                "scripts. Run `./dev env prune`, then `./dev env create`."
            )
        (folder / name).symlink_to(SCRIPTS / name)
    _wrap(folder, "lnk-testmemory", "memory_engine.py", "LNK_TESTMEMORY_RECORD=1 ")
    _wrap(folder, "lnk-testchan", "folder_channel.py")
    return folder


def _sandbox_bin() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="lnk-core-sandbox-"))
    _wrap(folder, "lnk-sandbox", "sandbox_double.py")
    return folder


BIN = _bin()
SANDBOX_BIN = _sandbox_bin()
os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture
def main_ports() -> Iterator[None]:
    """main keeps lnk-mini's usual ports (18790...), the same for every test and every run on the
    machine: a test starting main holds this lock until its agents are gone."""
    with open(Path(tempfile.gettempdir()) / "lnk-core-tests-main-ports.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture
def world() -> Iterator[World]:
    """A machine of the test's own: Link's roots, a stand-in provider, and `lnk` to run."""
    from world import World

    made = World()
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(scope="session")
def started() -> Iterator[World]:
    """A world with `work` started, shared by the tests that only read it or add what no other of
    them reads (its files, its endpoint, its control socket, its status): one start for them all.
    Each such test is marked `reading`, so that xdist runs them all in one worker."""
    from world import World

    made = World()
    try:
        made.start("work")
        yield made
    finally:
        made.close()


reading = pytest.mark.xdist_group("lnk-core-started")
"""The tests sharing `started`: xdist (`--dist=loadgroup`, pyproject) runs them in one worker."""
