"""Puts the fixture plugins on PATH for every test: lnk-mini and its variants (lnk-older, an adapter
from before `describe`), lnk-broken, a memory engine and a channel. The lnk-sandbox double is on
PATH only where a test puts it (see `sandbox`)."""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from world import World

FIXTURES = Path(__file__).parent / "fixtures"


def _wrap(folder: Path, name: str, script: str, extra: str = "", first: str = "") -> None:
    path = folder / name
    path.write_text(f'#!/bin/sh\n{first}{extra}exec "{sys.executable}" "{FIXTURES / script}" "$@"\n')
    path.chmod(0o755)


def _bin() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="lnk-core-bin-"))
    _wrap(folder, "lnk-mini", "mini.py")
    _wrap(folder, "lnk-broken", "mini.py", "LNK_MINI_BROKEN=1 ")
    _wrap(folder, "lnk-wide", "mini.py", "LNK_MINI_PORTS=3 ")
    _wrap(folder, "lnk-needy", "mini.py", "LNK_MINI_NEEDS=lan ")
    _wrap(folder, "lnk-risky", "mini.py", "LNK_MINI_NEEDS=open LNK_MINI_RISK=open-port ")
    _wrap(folder, "lnk-silent", "mini.py", "LNK_MINI_NO_ENDPOINT=1 ")
    _wrap(folder, "lnk-counted", "mini.py", "LNK_MINI_RECORD=1 ")
    _wrap(folder, "lnk-plain", "mini.py", "LNK_MINI_NO_STEPS=1 LNK_MINI_RECORD=1 ")
    # mini as it was before `describe`: an older adapter, to which it is an unknown command
    _wrap(folder, "lnk-older", "mini.py", "LNK_MINI_RECORD=1 ", first='[ "$1" = describe ] && exit 2\n')
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
