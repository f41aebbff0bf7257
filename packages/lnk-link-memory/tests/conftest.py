from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from lnk_link_memory.folder import Folder
from lnk_link_memory.memory import Config, Memory
from lnk_link_memory.models import choose

from link_plugin.layout import AgentFolder

sys.path.insert(0, str(Path(__file__).parent))
# The engine's sessions run `python -m lnk_link_memory`: this environment's python.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

MakeMemory = Callable[..., Memory]


@pytest.fixture
def agent(tmp_path: Path) -> AgentFolder:
    folder = AgentFolder(tmp_path / "agent")
    folder.create()
    return folder


@pytest.fixture
def memory_of(tmp_path: Path) -> Iterator[MakeMemory]:
    """Start a memory over an agent folder (words only unless asked); closed after the test. With
    start=False, only its index is opened: nothing scans or embeds, and searches answer from the file."""
    started: list[Memory] = []

    def make(
        folder: AgentFolder,
        embeddings: str | None = "none",
        server: str | None = None,
        notes: bool = True,
        limit: int = 4096,
        start: bool = True,
    ) -> Memory:
        written = folder.notes if notes else None
        config = Config(
            Folder.agent(folder.root, written),
            folder.memory_state("link"),
            written,
            limit,
            choose(embeddings, server),
            str(folder.root),
        )
        memory = Memory(config)
        if start:
            memory.start()
        else:
            memory.store.open()
        started.append(memory)
        return memory

    def close_all() -> None:
        while started:
            started.pop().close()

    make.close_all = close_all  # type: ignore[attr-defined]
    yield make
    close_all()


def write(path: Path, text: str, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def wait_for(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def iso(moment: float) -> str:
    """A moment as the ISO datetime a model would give `since`."""
    return datetime.fromtimestamp(moment).astimezone().isoformat()
