"""A document's words as copies are told by: hashed from its bytes in bulk, word for word as search
finds them, and made again from the index when an older release hashed them another way."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import MakeMemory, write
from lnk_link_memory import text

from link_plugin.layout import AgentFolder

TEXTS = [
    "Don't stop: 'quoted' it''s a—b c_d x-y",
    "東京タワーは高い. Tokyo tower, résumé ÜNÏCODE naïve",
    "• bullet « guillemets » © 2024 — em dash … nbsp\u00a0here ½ x²",
    "supercalifragilisticexpialidocious supercalifragilisticexpialidociousness ab",
    "internationalization internationalisation 0123456789abcdefghijklmnop",
    "",
    "   \n\t",
    "’tis the season’s end",
]


@pytest.mark.parametrize("body", TEXTS)
def test_words_are_hashed_word_for_word_as_search_finds_them(body: str) -> None:
    """The bulk hashing finds the very words `tokens` finds: each word hashed alone gives its hash."""
    words = text.tokens(body)
    alone = [text.word_hashes(word) for word in words]
    assert all(len(h) == 1 for h in alone)
    assert text.word_hashes(body).tolist() == [int(h[0]) for h in alone]
    assert text.fingerprint(body).words == len(words)


def test_distinct_words_hash_apart() -> None:
    """Long words that differ only inside still hash apart, up to 24 bytes and past it in the middle."""
    words = [f"config{a}option{b}value" for a in "abcdefgh" for b in "abcdefgh"]
    words += ["igeneralecogcloud", "igeneralccogcloud", "a" * 30, "a" * 31, "ab", "ba"]
    words += ["spacing2", "spacing4", "project4", "projects", "project3"]  # eight bytes, the last apart
    hashes = {int(text.word_hashes(word)[0]) for word in words}
    assert len(hashes) == len(words)


def test_the_same_words_in_another_order_share_the_bag_not_the_order() -> None:
    one, other = text.fingerprint("the grey heron waits"), text.fingerprint("waits the heron grey")
    assert one.bag == other.bag and one.sketch == other.sketch
    assert one.words_hash != other.words_hash
    assert np.frombuffer(one.bag, dtype=np.uint64).reshape(2, -1)[1].tolist() == [1, 1, 1, 1]


def test_bags_made_the_old_way_are_made_again_and_copies_still_found(agent: AgentFolder, memory_of: MakeMemory) -> None:
    body = "# Lease\n\nThe flat's lease ends in March and the deposit is two months of rent, paid in full.\n"
    write(agent.memory / "lease.md", body)
    memory = memory_of(agent)
    memory.scan()
    db = memory.store.db()
    db.execute("UPDATE documents SET bag = x'00', words_hash = 'old', words = 0")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'bags'")
    write(agent.memory / "archive" / "lease-copy.md", body)
    memory.scan()
    made = text.fingerprint(body)
    row = db.execute("SELECT words, words_hash, bag FROM documents WHERE path = 'memory/lease.md'").fetchone()
    assert row == (made.words, made.words_hash, made.bag) and memory.store.meta("bags") == text.BAG_VERSION
    lease = next(hit for hit in memory.search("lease deposit").results if hit.path == "memory/lease.md")
    assert lease.copies == ["memory/archive/lease-copy.md"]


def test_documents_fingerprinted_together_get_each_their_own() -> None:
    """Worked out together, each document's fingerprint is the one it has alone: no word of one
    runs into the next, and an empty document between others holds no words."""
    together = text.fingerprints(TEXTS + ["ab", "ab", "a a a"])
    for body, fingerprint in zip(TEXTS + ["ab", "ab", "a a a"], together, strict=True):
        assert fingerprint == text.fingerprints([body])[0]
        assert fingerprint.words == len(text.tokens(body))
        assert fingerprint.sketch == text.sketch(fingerprint.bag)  # as an index's bags are sketched again
    assert together[-2].bag == together[-3].bag and together[-1].words == 3
