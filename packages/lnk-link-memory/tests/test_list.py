"""list {since}: new, changed and removed, by when memory first saw each document."""

from __future__ import annotations

import time

import pytest
from conftest import MakeMemory, iso, write
from lnk_link_memory import indexer
from lnk_link_memory.memory import AskError

from link_plugin.layout import AgentFolder


def test_what_was_there_first_is_not_news(agent: AgentFolder, memory_of: MakeMemory) -> None:
    start = time.time() - 3600
    write(agent.memory / "old.md", "# Old\n\nthere from the start\n")
    memory = memory_of(agent)
    memory.scan()
    assert memory.changes(since=iso(start)).entries == []
    assert [e.path for e in memory.changes().entries] == ["memory/old.md"]


def test_new_changed_and_removed(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "keep.md", "# Keep\n\none\n")
    write(agent.memory / "edit.md", "# Edit\n\none\n")
    write(agent.memory / "gone.md", "# Gone soon\n\none\n")
    memory = memory_of(agent)
    memory.scan()
    moment = time.time()
    time.sleep(0.05)
    # Copied in with a date years back: still new, since memory first sees it now.
    write(agent.memory / "copied.md", "# Copied\n\nold file\n", mtime=moment - 86400 * 900)
    write(agent.memory / "edit.md", "# Edit\n\ntwo\n")
    (agent.memory / "gone.md").unlink()
    memory.scan()
    states = {e.path: e.state for e in memory.changes(since=iso(moment)).entries}
    assert states == {"memory/copied.md": "new", "memory/edit.md": "changed", "memory/gone.md": "removed"}
    removed = next(e for e in memory.changes(since=iso(moment)).entries if e.state == "removed")
    assert removed.title == "Gone soon"
    later = time.time()
    assert memory.changes(since=iso(later)).entries == []


def test_a_touched_file_with_the_same_words_is_not_changed(agent: AgentFolder, memory_of: MakeMemory) -> None:
    path = write(agent.memory / "same.md", "# Same\n\nwords\n")
    memory = memory_of(agent)
    memory.scan()
    moment = time.time()
    time.sleep(0.05)
    path.write_text("# Same\n\nwords\n")
    memory.scan()
    assert memory.changes(since=iso(moment)).entries == []


def test_only_the_latest_tombstones_are_kept(
    agent: AgentFolder, memory_of: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexer, "REMOVED_KEPT", 3)
    memory = memory_of(agent)
    memory.scan()
    moment = time.time() - 1
    for i in range(5):
        write(agent.memory / f"d{i}.md", f"# D{i}\n\ntext {i}\n")
        memory.scan()
        (agent.memory / f"d{i}.md").unlink()
        memory.scan()
    removed = [e.path for e in memory.changes(since=iso(moment)).entries if e.state == "removed"]
    assert removed == ["memory/d4.md", "memory/d3.md", "memory/d2.md"]


def test_list_leaves_out_whole_entries_past_its_size_and_says_next(agent: AgentFolder, memory_of: MakeMemory) -> None:
    for i in range(40):
        write(agent.memory / f"entry-{i:02}.md", f"# {'Long title ' * 30}{i}\n\nbody\n")
    memory = memory_of(agent)
    memory.scan()
    first = memory.changes(size=300)
    assert 0 < len(first.entries) < 40 and first.next is not None
    assert all(len(e.title) <= 200 for e in first.entries)
    assert len(first.model_dump_json()) <= 300 * 4
    seen = [e.path for e in first.entries]
    answer = first
    while answer.next:
        answer = memory.changes(size=300, next=answer.next)
        seen.extend(e.path for e in answer.entries)
    assert len(seen) == 40 == len(set(seen))


def test_since_takes_a_date(agent: AgentFolder, memory_of: MakeMemory) -> None:
    memory = memory_of(agent)
    memory.scan()
    write(agent.memory / "today.md", "# Today\n\nnew\n")
    memory.scan()
    assert [e.path for e in memory.changes(since="2000-01-01").entries] == ["memory/today.md"]
    with pytest.raises(AskError, match="ISO date"):
        memory.changes(since="yesterday")
