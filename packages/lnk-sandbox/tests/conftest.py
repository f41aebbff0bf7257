"""Every test gets a Link of its own (settings, agents, home) and never touches a real one."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from helpers import Echo, Link, Listener, short_root

MAIN_ID = "mainagent001"
OTHER_ID = "otheragent01"


@pytest.fixture
def link(monkeypatch: pytest.MonkeyPatch) -> Iterator[Link]:
    for root in short_root():
        link = Link(root)
        link.home.mkdir()
        link.layout.config.mkdir(parents=True)
        (link.home / "notes.txt").write_text("the owner's own file\n")
        link.environ = {
            **os.environ,
            "HOME": str(link.home),
            "LNK_CONFIG_DIR": str(link.layout.config),
            "LNK_AGENTS_DIR": str(link.layout.agents),
        }
        for name in ("HOME", "LNK_CONFIG_DIR", "LNK_AGENTS_DIR"):
            monkeypatch.setenv(name, link.environ[name])
        link.agent("main", MAIN_ID)
        link.agent("other", OTHER_ID)
        (link.layout.agent("other").home / "work" / "secret.txt").write_text("other agent's secret\n")
        yield link


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


@pytest.fixture
def echo() -> Iterator[Echo]:
    """A TCP server on the loopback sending back what it gets, then `after your end` once the
    sender ended its side."""
    server = Echo(then=b"after your end")
    yield server
    server.close()
