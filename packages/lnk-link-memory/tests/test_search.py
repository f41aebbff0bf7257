"""One search: words and meaning merged by rank, near ties newest first, copies once."""

from __future__ import annotations

import sqlite3
import time

import pytest
from conftest import MakeMemory, iso, write
from lnk_link_memory.memory import AskError
from lnk_link_memory.search import Ranked, fuse, newest_among_ties

from link_plugin.layout import AgentFolder


def test_reciprocal_rank_fusion_adds_one_over_sixty_plus_rank() -> None:
    words = [Ranked(1, 9.0, 0), Ranked(2, 5.0, 0), Ranked(3, 1.0, 0)]
    meaning = [Ranked(3, 0.9, 0), Ranked(1, 0.5, 0)]
    scores = fuse([words, meaning])
    assert scores[1] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[2] == pytest.approx(1 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert sorted(scores, key=lambda d: -scores[d]) == [1, 3, 2]


def test_near_ties_put_the_newest_first_but_never_above_a_clearly_better_match() -> None:
    ranked = [Ranked(1, 10.0, 0), Ranked(2, 9.6, 0), Ranked(3, 9.2, 0), Ranked(4, 5.0, 0), Ranked(5, 4.8, 0)]
    ranked.append(Ranked(6, 1.0, 0))
    mtime = {1: 100.0, 2: 300.0, 3: 200.0, 4: 10.0, 5: 50.0, 6: 900.0}
    order = [r.doc for r in newest_among_ties(ranked, mtime)]
    assert order == [2, 3, 1, 5, 4, 6]


def test_a_list_of_close_scores_ties_on_its_own_scale() -> None:
    """A model's cosines sit close together: a tenth of the score would tie most of the list."""
    scores = [0.62, 0.60, 0.55, 0.50, 0.45, 0.40]
    ranked = [Ranked(doc, score, 0) for doc, score in enumerate(scores, start=1)]
    newest_last = {doc: float(doc) for doc in range(1, 7)}
    order = [r.doc for r in newest_among_ties(ranked, newest_last)]
    assert order == [2, 1, 3, 4, 5, 6]


def test_a_clear_lead_on_the_first_page_is_not_tied_by_a_long_tail() -> None:
    """Fifty ranked documents fall far below the best; the ten a reader sees sit close. The lead is
    clearly better than the rest of that page and stays first, however new the others are."""
    scores = [10.0, 9.5, 9.45, 9.4, 9.35, 9.3, 9.25, 9.2, 9.15, 9.1, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0]
    ranked = [Ranked(doc, score, 0) for doc, score in enumerate(scores, start=1)]
    newest_last = {doc: float(doc) for doc in range(1, len(scores) + 1)}
    order = [r.doc for r in newest_among_ties(ranked, newest_last)]
    assert order[0] == 1
    assert order[1:3] == [3, 2]  # within a tenth of the page's spread: the newer first


def test_a_newer_note_beats_an_older_one_saying_nearly_the_same(agent: AgentFolder, memory_of: MakeMemory) -> None:
    now = time.time()
    write(agent.memory / "old-plan.md", "# Plan\n\nThe garden party is on Saturday at noon.\n", now - 86400 * 30)
    write(agent.memory / "new-plan.md", "# Plan\n\nThe garden party is now on Saturday at noon.\n", now - 60)
    write(
        agent.memory / "clear.md",
        "# Garden party\n\nGarden party garden party: the garden party menu.\n",
        now - 86400 * 90,
    )
    memory = memory_of(agent)
    memory.scan()
    paths = [hit.path for hit in memory.search("garden party saturday").results]
    assert paths.index("memory/new-plan.md") < paths.index("memory/old-plan.md")


def test_words_match_says_why_and_conversations_are_marked(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "dentist.md", "# Dentist\n\nDr Molar, Tuesday 10:00.\n")
    write(agent.chats / "telegram:42" / "conversation.md", "**You**: book the dentist for me\n")
    write(agent.chats / "telegram:42" / "events" / "0001.json", '{"text": "dentist event"}')
    memory = memory_of(agent)
    memory.scan()
    answer = memory.search("dentist")
    kinds = {hit.path: (hit.kind, hit.matched) for hit in answer.results}
    assert kinds == {
        "memory/dentist.md": ("document", "words"),
        "chats/telegram:42/conversation.md": ("conversation", "words"),
    }
    assert "searched by words only" in (answer.note or "")


def test_the_title_counts_more_than_the_body(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "a.md", "# Budget\n\nNumbers for the year.\n")
    write(agent.memory / "b.md", "# Numbers\n\nThe budget for the year, and other numbers.\n")
    memory = memory_of(agent)
    memory.scan()
    assert memory.search("budget").results[0].path == "memory/a.md"


def test_copies_come_once_under_the_shorter_path(agent: AgentFolder, memory_of: MakeMemory) -> None:
    body = "# Lease\n\nThe flat's lease ends in March and the deposit is two months of rent.\n"
    write(agent.memory / "lease.md", body)
    write(agent.memory / "archive" / "2024" / "lease-copy.md", body)
    write(agent.memory / "other.md", "# Lease renewal\n\nCall the landlord about the lease in February.\n")
    memory = memory_of(agent)
    memory.scan()
    results = memory.search("lease").results
    assert [hit.path for hit in results].count("memory/lease.md") == 1
    lease = next(hit for hit in results if hit.path == "memory/lease.md")
    assert lease.copies == ["memory/archive/2024/lease-copy.md"]
    assert all(hit.path != "memory/archive/2024/lease-copy.md" for hit in results)


def test_nine_in_ten_of_twenty_words_make_a_copy_and_fewer_do_not(agent: AgentFolder, memory_of: MakeMemory) -> None:
    words = [f"word{i}" for i in range(40)]
    write(agent.memory / "a.md", "lighthouse " + " ".join(words))
    write(agent.memory / "near.md", "lighthouse " + " ".join(words[:-3] + ["x1", "x2", "x3"]))  # 38 of 41 shared
    write(agent.memory / "far.md", "lighthouse " + " ".join(words[:-8] + [f"y{i}" for i in range(8)]))  # 33 of 41
    write(agent.memory / "s1.md", "lighthouse keeper notes")
    write(agent.memory / "s2.md", "lighthouse keeper notebook")  # short: only all the same words count
    memory = memory_of(agent)
    memory.scan()
    results = {hit.path: hit.copies for hit in memory.search("lighthouse").results}
    assert results["memory/a.md"] == ["memory/near.md"]
    assert "memory/far.md" in results
    assert "memory/s1.md" in results and "memory/s2.md" in results


def test_cjk_text_is_found(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "travel.md", "# 旅行\n\n東京タワーに行きました。とても高かったです。\n")
    write(agent.memory / "food.md", "# 食事\n\n北京で北京ダックを食べた。\n")
    memory = memory_of(agent)
    memory.scan()
    assert [hit.path for hit in memory.search("タワー").results] == ["memory/travel.md"]
    assert [hit.path for hit in memory.search("東京").results] == ["memory/travel.md"]
    assert [hit.path for hit in memory.search("北京ダック").results] == ["memory/food.md"]
    assert [hit.path for hit in memory.search("鸭").results] == []


def test_since_keeps_only_what_changed_or_is_new(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "before.md", "# Tea\n\nGreen tea notes.\n")
    memory = memory_of(agent)
    memory.scan()
    moment = time.time()
    time.sleep(0.05)
    write(agent.memory / "after.md", "# Tea\n\nBlack tea notes.\n", mtime=moment - 86400 * 365)
    memory.scan()
    paths = [hit.path for hit in memory.search("tea", since=iso(moment)).results]
    assert paths == ["memory/after.md"]


def test_search_pages_with_next_and_stays_within_its_size(agent: AgentFolder, memory_of: MakeMemory) -> None:
    for i in range(30):
        filler = " ".join(f"w{i}x{j}" for j in range(150))
        write(agent.memory / f"note{i:02}.md", f"# Note {i}\n\nharbour {filler}\n")
    memory = memory_of(agent)
    memory.scan()
    first = memory.search("harbour")
    assert len(first.model_dump_json()) <= 6000 * 4
    assert first.next is not None
    seen = [hit.path for hit in first.results]
    answer = first
    while answer.next is not None:
        answer = memory.search("harbour", next=answer.next)
        seen.extend(hit.path for hit in answer.results)
    assert sorted(seen) == sorted(f"memory/note{i:02}.md" for i in range(30))
    small = memory.search("harbour", size=200)
    assert len(small.results) >= 1 and len(small.model_dump_json()) <= 200 * 4 + 2000


def test_bad_arguments_say_what_to_do(agent: AgentFolder, memory_of: MakeMemory) -> None:
    memory = memory_of(agent)
    with pytest.raises(AskError, match="ISO date"):
        memory.search("x", since="last tuesday")
    with pytest.raises(AskError, match="next"):
        memory.search("x", next="abc")
    with pytest.raises(AskError, match="empty"):
        memory.search("   ")


def test_what_has_no_vector_yet_is_searched_by_words_and_loses_nothing_for_it(
    agent: AgentFolder, memory_of: MakeMemory
) -> None:
    """Half the documents embedded: the best match by words, not embedded yet, still comes first."""
    write(agent.memory / "tax-deadline.md", "# Tax\n\nThe quarterly tax return deadline is the 15th of April.\n")
    for name, body in {
        "accountant.md": "Meeting the accountant about taxes owed and the tax office's letters.",
        "vat.md": "VAT filing for the freelance work: invoices, receipts and the tax period.",
        "pension.md": "Pension contributions lower the income tax paid each year.",
        "salary.md": "Salary slips and the tax withheld from them, month by month.",
        "garden.md": "Tomatoes, basil and the new raised bed by the fence.",
    }.items():
        write(agent.memory / name, f"# {name.removesuffix('.md').title()}\n\n{body}\n")
    memory_of(agent, embeddings=None).settle()  # every document embedded, then that memory is closed
    memory_of.close_all()  # type: ignore[attr-defined]
    db = sqlite3.connect(agent.memory_state("link") / "index.db")
    with db:
        db.execute(
            "DELETE FROM vectors WHERE chunk IN (SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc"
            " WHERE d.path IN ('memory/tax-deadline.md', 'memory/garden.md', 'memory/salary.md'))"
        )
    db.close()
    memory = memory_of(agent, embeddings=None, start=False)
    answer = memory.search("when is the quarterly tax return due")
    assert answer.embedded == "6 of 12 chunks embedded"
    assert answer.results[0].path == "memory/tax-deadline.md"
    matched = {hit.path: hit.matched for hit in answer.results}
    assert matched["memory/tax-deadline.md"] == matched["memory/salary.md"] == "words"  # no vector yet
    assert matched["memory/vat.md"] == matched["memory/pension.md"] == "both"
