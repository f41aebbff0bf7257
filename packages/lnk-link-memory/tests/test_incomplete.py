"""Every answer says when the index is incomplete: during the first reading of the folder and while
it is built again after a corrupt index, with how many documents were read so far."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from conftest import MakeMemory, wait_for, write
from lnk_link_memory import indexer
from lnk_link_memory.folder import Found, Skipped
from lnk_link_memory.memory import INDEX, AskError
from lnk_link_memory.store import BATCH_SECONDS

from link_plugin.layout import AgentFolder


class Held:
    """The walk holds still once `after` documents are written and committed: a scan caught in the
    middle. Writes are committed a batch at a time, by the time the walk moves on BATCH_SECONDS
    after a batch began: it waits that long before the next document, then holds after it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, after: int) -> None:
        self.after = after
        self.reached = threading.Event()
        self.go = threading.Event()
        walk = indexer.walk

        def held(folder: object) -> Iterator[Found | Skipped]:
            for count, item in enumerate(walk(folder)):  # type: ignore[arg-type]
                if count == self.after and not self.go.is_set():
                    time.sleep(BATCH_SECONDS * 1.5)
                if count == self.after + 1 and not self.go.is_set():
                    self.reached.set()
                    self.go.wait(30)
                yield item

        monkeypatch.setattr(indexer, "walk", held)


def _folder(agent: AgentFolder) -> None:
    for i in range(5):
        write(agent.memory / f"n{i}.md", f"# Note {i}\n\nthe ibis {i}, see [[n{(i + 1) % 5}]]\n")


def test_answers_say_the_first_reading_is_under_way(
    agent: AgentFolder, memory_of: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    _folder(agent)
    held = Held(monkeypatch, after=2)
    memory = memory_of(agent)
    assert held.reached.wait(30)
    wait_for(lambda: memory.status().documents == 2)
    expected = "the index is incomplete: 2 documents read so far (it is reading the folder for the first time)"
    search = memory.search("ibis")
    assert search.incomplete == expected and len(search.results) == 2
    assert search.embedded == "0 of 4 chunks embedded"
    assert memory.changes().incomplete == expected
    assert memory.links("memory/n0.md").incomplete == expected
    with pytest.raises(AskError, match="not a document memory holds yet: the index is incomplete"):
        memory.links("memory/n4.md")
    assert memory.status().incomplete == expected and memory.status().last_scan is None
    held.go.set()
    wait_for(lambda: memory.status().last_scan is not None)
    search = memory.search("ibis")
    assert search.incomplete is None and len(search.results) == 5
    assert memory.changes().incomplete is None and memory.links("memory/n4.md").incomplete is None
    assert memory.status().incomplete is None


def test_answers_say_a_rebuilt_index_is_still_filling(
    agent: AgentFolder, memory_of: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    _folder(agent)
    memory = memory_of(agent)
    memory.scan()
    assert memory.search("ibis").incomplete is None
    memory.close()
    path = agent.memory_state("link") / INDEX
    path.write_bytes(b"\xff" * path.stat().st_size)  # corrupt: set aside and built again at the next start
    held = Held(monkeypatch, after=2)
    again = memory_of(agent)
    assert held.reached.wait(30)
    answer = again.search("ibis")
    assert answer.incomplete is not None and "being built again" in answer.incomplete
    assert "2 documents read so far" in answer.incomplete and len(answer.results) == 2
    held.go.set()
    wait_for(lambda: again.search("ibis").incomplete is None)
    assert len(again.search("ibis").results) == 5
