"""What memory reads: Home/memory and conversations, never through a link; read gives whole lines."""

from __future__ import annotations

import os

import pytest
from conftest import MakeMemory, write
from lnk_link_memory.memory import AskError

from link_plugin.layout import AgentFolder


def test_symbolic_links_are_never_followed(
    agent: AgentFolder, memory_of: MakeMemory, tmp_path: os.PathLike[str]
) -> None:
    secret = write(agent.root.parent / "secret" / "keys.md", "# Keys\n\nthe launch code is swordfish\n")
    (agent.memory / "keys.md").symlink_to(secret)
    (agent.memory / "elsewhere").symlink_to(secret.parent, target_is_directory=True)
    (agent.chats / "telegram:1").mkdir()
    (agent.chats / "telegram:1" / "conversation.md").symlink_to(secret)
    (agent.chats / "telegram:2").symlink_to(secret.parent, target_is_directory=True)
    memory = memory_of(agent)
    memory.scan()
    assert memory.search("swordfish").results == []
    for path in ("memory/keys.md", "memory/elsewhere/keys.md", "chats/telegram:1/conversation.md"):
        with pytest.raises(AskError, match="symbolic link"):
            memory.read(path)
    skipped = {s.path: s.why for s in memory.status().skipped}
    assert "symbolic link" in skipped["memory/keys.md"] and "symbolic link" in skipped["memory/elsewhere"]


def test_a_hard_link_is_read_as_a_regular_file(agent: AgentFolder, memory_of: MakeMemory) -> None:
    original = write(agent.home / "work" / "draft.md", "# Draft\n\nthe otter report\n")
    os.link(original, agent.memory / "draft.md")
    memory = memory_of(agent)
    memory.scan()
    assert [hit.path for hit in memory.search("otter").results] == ["memory/draft.md"]


def test_only_memory_and_conversations_are_indexed(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.home / "work" / "scratch.md", "pelican scratch\n")
    write(agent.memory / ".hidden.md", "pelican hidden\n")
    write(agent.memory / "picture.png", "pelican png\n")
    write(agent.chats / "slack:9" / "events" / "1.md", "pelican event\n")
    write(agent.chats / "slack:9" / "turn.json", '{"pelican": 1}')
    write(agent.chats / "slack:9" / "conversation.md", "**You**: a pelican flew by\n")
    write(agent.memory / "birds" / "pelican.txt", "pelican facts\n")
    memory = memory_of(agent)
    memory.scan()
    paths = sorted(hit.path for hit in memory.search("pelican").results)
    assert paths == ["chats/slack:9/conversation.md", "memory/birds/pelican.txt"]


def test_read_gives_whole_lines_and_where_to_go_on(agent: AgentFolder, memory_of: MakeMemory) -> None:
    lines = [f"line {i:03} " + "x" * 50 for i in range(1, 201)]
    write(agent.memory / "long.md", "\n".join(lines) + "\n")
    memory = memory_of(agent)
    first = memory.read("memory/long.md", size=500)
    assert first.start == 1 and first.next == first.end + 1 and first.lines == 200
    assert first.text.splitlines() == lines[: first.end]
    assert len(first.model_dump_json()) <= 500 * 4
    rest = memory.read("memory/long.md", start=first.next)
    assert rest.text.splitlines()[0] == lines[first.end] and rest.next is None or rest.next > rest.end


def test_a_line_longer_than_the_size_is_cut_and_says_so(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "wide.md", "y" * 50_000 + "\nsecond\n")
    memory = memory_of(agent)
    answer = memory.read("memory/wide.md")
    assert answer.cut and answer.end == 1 and answer.next == 2
    assert len(answer.text) < 50_000
    assert memory.read("memory/wide.md", start=2).text == "second"


def test_read_refuses_paths_out_of_memory(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.root / "Memory" / "x.md", "state\n")
    memory = memory_of(agent)
    for path in (
        "../Memory/x.md",
        "/etc/passwd",
        "memory/../../Memory/x.md",
        "Home/memory/x.md",
        "chats/a/events/1.md",
    ):
        with pytest.raises(AskError):
            memory.read(path)
    with pytest.raises(AskError, match="has 1 lines"):
        write(agent.memory / "one.md", "only\n")
        memory.read("memory/one.md", start=5)


def test_skills_are_read_by_path_but_not_searched(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.home / "skills" / "cook" / "SKILL.md", "# Cook\n\nbraise the leeks\n")
    memory = memory_of(agent)
    memory.scan()
    assert memory.search("leeks").results == []
    assert "braise the leeks" in memory.read("skills/cook/SKILL.md").text
