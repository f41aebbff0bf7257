"""links {path}: markdown and wiki links, resolved when asked, never followed on disk."""

from __future__ import annotations

from conftest import MakeMemory, write
from lnk_link_memory import links

from link_plugin.layout import AgentFolder


def test_links_both_ways(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "projects" / "garden.md", "# Garden\n\nSee [the budget](../budget.md) and [[Seeds]].\n")
    write(agent.memory / "budget.md", "# Budget\n\nFor [[garden]].\n")
    write(agent.memory / "seeds.md", "# Seeds\n\nTomatoes.\n")
    memory = memory_of(agent)
    memory.scan()
    answer = memory.links("memory/projects/garden.md")
    assert [(e.path, e.kind) for e in answer.links_to] == [
        ("memory/budget.md", "markdown"),
        ("memory/seeds.md", "wiki"),
    ]
    assert [e.path for e in answer.linked_from] == ["memory/budget.md"]
    assert [e.path for e in memory.links("memory/seeds.md").linked_from] == ["memory/projects/garden.md"]


def test_a_link_to_a_note_made_later_starts_working(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "index.md", "# Index\n\n[[Ideas]] and [plans](plans.md)\n")
    memory = memory_of(agent)
    memory.scan()
    assert [e.path for e in memory.links("memory/index.md").links_to] == [None, None]
    write(agent.memory / "ideas.md", "# Ideas\n")
    write(agent.memory / "plans.md", "# Plans\n")
    memory.scan()
    assert [e.path for e in memory.links("memory/index.md").links_to] == ["memory/ideas.md", "memory/plans.md"]
    assert [e.path for e in memory.links("memory/ideas.md").linked_from] == ["memory/index.md"]


def test_several_of_a_name_mean_the_shortest_path(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "a" / "b" / "todo.md", "# deep\n")
    write(agent.memory / "a" / "todo.md", "# shallow\n")
    write(agent.memory / "home.md", "[[todo]] [[b/todo]]\n")
    memory = memory_of(agent)
    memory.scan()
    assert [e.path for e in memory.links("memory/home.md").links_to] == ["memory/a/todo.md", "memory/a/b/todo.md"]
    assert [e.path for e in memory.links("memory/a/b/todo.md").linked_from] == ["memory/home.md"]


def test_web_and_out_of_folder_links_are_no_links() -> None:
    text = (
        "[web](https://example.com/a.md) [mail](mailto:x@y) [up](../../etc/passwd) [abs](/etc/passwd)"
        " [anchor](#top) [ok](sub/note.md#part) [[http://x]] [[../../x]]"
    )
    found = links.found_in(text, "memory/n.md", "memory/")
    assert [(link.kind, link.key) for link in found] == [
        ("markdown", "memory/etc/passwd"),
        ("markdown", "memory/sub/note.md"),
    ]


def test_a_document_keeps_its_first_thousand_links_none_too_long() -> None:
    text = " ".join(f"[[n{i}]]" for i in range(1200)) + " [[" + "x" * 600 + "]]"
    found = links.found_in(text, "memory/n.md", "memory/")
    assert len(found) == 1000 and found[-1].target == "n999"
    assert all(
        len(link.target.encode()) <= 512 for link in links.found_in("[[" + "y" * 600 + "]]", "memory/n.md", "memory/")
    )
