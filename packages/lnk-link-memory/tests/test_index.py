"""The index: a change counter kept by triggers, vectors reloaded when it moves, background embedding,
only changed chunks embedded again, and a corrupt file set aside and built again."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from conftest import MakeMemory, wait_for, write
from fake_embeddings import FakeEmbeddings
from lnk_link_memory import text, vectors
from lnk_link_memory.embedding import WORDS_FIRST
from lnk_link_memory.memory import INDEX

from link_plugin.layout import AgentFolder

MODEL = "qwen3-embedding"


@pytest.fixture
def server() -> Iterator[FakeEmbeddings]:
    with FakeEmbeddings() as fake:
        yield fake


def _vectors(agent: AgentFolder) -> dict[str, int]:
    """Each chunk's text -> the sequence number its vector was stored under."""
    with sqlite3.connect(agent.memory_state("link") / INDEX) as db:
        return dict(db.execute("SELECT c.text, v.seq FROM vectors v JOIN chunks c ON c.id = v.chunk").fetchall())


def test_the_counter_moves_with_every_change_to_chunks(agent: AgentFolder, memory_of: MakeMemory) -> None:
    memory = memory_of(agent)
    memory.scan()
    before = memory.store.counter()
    write(agent.memory / "a.md", "# A\n\none\n\n## B\n\ntwo\n")
    memory.scan()
    added = memory.store.counter()
    assert added > before
    write(agent.memory / "b.md", "# B\n\nthree\n")
    (agent.memory / "a.md").unlink()
    memory.scan()
    removed = memory.store.counter()
    assert removed > added
    # A writer that isn't this server moves it too, the triggers living in the file: one that writes
    # a document's chunks writes its row in the same change, as the indexer does.
    with sqlite3.connect(agent.memory_state("link") / INDEX) as other:
        other.execute("UPDATE documents SET hash = 'other' WHERE path = 'memory/b.md'")
        other.execute(
            "INSERT INTO chunks(doc, ord, line, text, hash) SELECT id, 9, 1, 'x', 'x' FROM documents"
            " WHERE path = 'memory/b.md'"
        )
    assert memory.store.counter() > removed


def test_meaning_search_through_the_model_server(
    agent: AgentFolder, memory_of: MakeMemory, server: FakeEmbeddings
) -> None:
    write(agent.memory / "boat.md", "# Boat\n\nThe sailing boat is moored at the marina.\n")
    write(agent.memory / "cat.md", "# Cat\n\nThe cat sleeps on the sofa all afternoon.\n")
    memory = memory_of(agent, embeddings=MODEL, server=server.url)
    memory.settle()
    hits = memory.search("sailing marina moored boat").results
    assert hits[0].path == "memory/boat.md" and hits[0].matched == "both"
    assert {r["model"] for r in server.requests} == {MODEL}
    assert all(r["path"] == "/v1/embeddings" for r in server.requests)
    assert memory.search("x").embedded == "4 of 4 chunks embedded"
    assert memory.status().model == MODEL


def test_a_changed_chunks_old_vector_is_never_used(
    agent: AgentFolder, memory_of: MakeMemory, server: FakeEmbeddings
) -> None:
    write(agent.memory / "n.md", "# Note\n\nzebra giraffe savanna\n\n## Other\n\nkept the same\n")
    memory = memory_of(agent, embeddings=MODEL, server=server.url)
    memory.settle()
    assert memory.search("zebra giraffe savanna").results[0].matched == "both"
    write(agent.memory / "n.md", "# Note\n\npenguin iceberg\n\n## Other\n\nkept the same\n")
    server.delay = 3.0  # the new chunk waits for its vector; the old one must not stand in for it
    memory.scan()
    chunks, docs, matrix = memory.cache.current()
    texts = dict(memory.store.db().execute("SELECT id, text FROM chunks").fetchall())
    assert all(texts.get(int(c), "").find("zebra") < 0 for c in chunks)
    hits = memory.search("zebra giraffe savanna").results
    assert all("zebra" not in hit.text for hit in hits)


def test_only_changed_chunks_are_embedded_again_across_restarts(
    agent: AgentFolder, memory_of: MakeMemory, server: FakeEmbeddings
) -> None:
    write(agent.memory / "n.md", "# Note\n\nfirst part\n\n## Second\n\nsecond part\n")
    memory = memory_of(agent, embeddings=MODEL, server=server.url)
    memory.settle()
    memory.close()
    before = _vectors(agent)
    write(agent.memory / "n.md", "# Note\n\nfirst part\n\n## Second\n\nsecond part, edited\n")
    again = memory_of(agent, embeddings=MODEL, server=server.url)
    asked = len(server.requests)
    again.settle()
    after = _vectors(agent)
    kept = {text for text in after if after[text] == before.get(text)}
    assert kept == {"# Note\n\nfirst part", "Note"} or kept == {"# Note\n\nfirst part", "n"}
    embedded = [t for r in server.requests[asked:] for t in r["input"]]
    assert embedded == ["Note\n\n## Second\n\nsecond part, edited"]


def test_the_first_index_never_holds_up_a_search(agent: AgentFolder, memory_of: MakeMemory) -> None:
    for i in range(20):
        write(agent.memory / f"d{i}.md", f"# Doc {i}\n\nthe heron number {i}\n")
    with FakeEmbeddings(delay=0.5) as slow:
        memory = memory_of(agent, embeddings=MODEL, server=slow.url)
        memory.scan()
        answer = memory.search("heron")
        assert len(answer.results) == 10 and all(hit.matched in ("words", "both") for hit in answer.results)
        done, _, total = answer.embedded.partition(" of ")
        assert int(done) < int(total.split()[0])


def test_an_unreachable_model_server_leaves_search_by_words(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "a.md", "# Kite\n\nthe red kite\n")
    memory = memory_of(agent, embeddings=MODEL, server="http://127.0.0.1:9")
    memory.scan()
    answer = memory.search("kite")
    assert [hit.path for hit in answer.results] == ["memory/a.md"]
    assert "words only" in (answer.note or "") and "can't be reached" in (answer.note or "")
    wait_for(lambda: memory.status().error is not None)


def test_a_corrupt_index_is_set_aside_and_built_again(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "a.md", "# Owl\n\nthe barn owl\n")
    state = agent.memory_state("link")
    state.mkdir(parents=True)
    (state / INDEX).write_bytes(b"this is not a database at all" * 100)
    memory = memory_of(agent)
    memory.scan()
    assert [hit.path for hit in memory.search("owl").results] == ["memory/a.md"]
    assert [p.name for p in state.iterdir() if ".corrupt-" in p.name]


def test_search_keeps_answering_when_the_index_breaks_under_it(agent: AgentFolder, memory_of: MakeMemory) -> None:
    for i in range(50):
        write(agent.memory / f"d{i}.md", f"# Doc {i}\n\nthe badger\n" + " ".join(f"f{i}w{j}" for j in range(300)))
    memory = memory_of(agent)
    memory.scan()
    path = agent.memory_state("link") / INDEX
    memory.store.db().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[4096 : len(data) - 4096] = b"\xff" * (len(data) - 8192)
    path.write_bytes(bytes(data))
    memory.search("badger")  # answers (perhaps from a fresh, still filling index) instead of failing
    memory.scan()
    wait_for(lambda: len(memory.search("badger").results) == 10)


def test_embedding_waits_while_words_are_indexed(
    agent: AgentFolder, memory_of: MakeMemory, server: FakeEmbeddings
) -> None:
    """Words first: while any scan of the engine indexes documents, no embedding starts."""
    write(agent.memory / "a.md", "# A\n\nthe gannet dives\n")
    with WORDS_FIRST.indexing():  # another agent's scan, writing its documents
        memory = memory_of(agent, embeddings=MODEL, server=server.url)
        memory.scan()
        time.sleep(1.5)
        assert server.requests == [] and memory.search("gannet").results[0].matched == "words"
    wait_for(lambda: memory.status().embedded == memory.status().chunks > 0)


def test_sketches_made_the_old_way_are_made_again_from_the_bags(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "a.md", "# A\n\n" + " ".join(f"word{i}" for i in range(40)) + "\n")
    memory = memory_of(agent)
    memory.scan()
    db = memory.store.db()
    db.execute("UPDATE documents SET sketch = zeroblob(256)")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'sketches'")
    memory.scan()
    bag, sketch = db.execute("SELECT bag, sketch FROM documents").fetchone()
    assert sketch == text.sketch(bag) and memory.store.meta("sketches") == text.SKETCH_VERSION


def test_the_vectors_searched_are_the_index_s_own_however_they_are_read(
    agent: AgentFolder, memory_of: MakeMemory, server: FakeEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "_BLOCK", 3)  # read a few at a time: every block boundary crossed
    for i in range(6):
        write(agent.memory / f"d{i}.md", f"# Doc {i}\n\nthe heron number {i}\n\n## More\n\nand the egret {i}\n")
    memory = memory_of(agent, embeddings=MODEL, server=server.url)
    memory.settle()
    write(agent.memory / "d0.md", "# Doc 0\n\na kingfisher now\n\n## More\n\nand the egret 0\n")
    (agent.memory / "d1.md").unlink()
    memory.settle()
    chunks, _, matrix = memory.cache.current()
    stored = {
        int(chunk): np.frombuffer(blob, dtype=np.float32)
        for chunk, blob in memory.store.db().execute("SELECT chunk, vector FROM vectors WHERE model = ?", (MODEL,))
    }
    assert sorted(chunks.tolist()) == sorted(stored)
    for chunk, row in zip(chunks.tolist(), matrix, strict=True):
        assert np.array_equal(row, stored[chunk])


def test_calls_from_many_threads_hold_few_connections_to_the_index(agent: AgentFolder, memory_of: MakeMemory) -> None:
    """An engine's workers answer every agent's calls: each keeping a connection (and its page cache)
    to each agent's index made an engine of ten agents hold 140 of them."""
    for i in range(5):
        write(agent.memory / f"d{i}.md", f"# Doc {i}\n\nthe heron number {i}\n")
    memory = memory_of(agent)
    memory.settle()
    for _ in range(20):
        callers = [threading.Thread(target=lambda: memory.search("heron")) for _ in range(3)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
    index = str(agent.memory_state("link") / INDEX)
    opened = [fd for fd in os.listdir("/proc/self/fd") if _target(fd) == index]
    assert 1 <= len(opened) <= 6  # the scanning thread's, the words thread's, and the few calls share


def _target(fd: str) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def _fts_rows(agent: AgentFolder) -> set[int]:
    with sqlite3.connect(agent.memory_state("link") / INDEX) as db:
        return {row[0] for row in db.execute("SELECT rowid FROM fts")}


def _chunk_ids(agent: AgentFolder) -> set[int]:
    with sqlite3.connect(agent.memory_state("link") / INDEX) as db:
        return {row[0] for row in db.execute("SELECT id FROM chunks")}


def test_words_put_in_at_commit_follow_every_change_of_the_batch(agent: AgentFolder, memory_of: MakeMemory) -> None:
    """Within one batch a document is indexed, changed, and another indexed then removed: the words
    table ends up holding exactly the chunks there are, each with its last words."""
    write(agent.memory / "keep.md", "# Keep\n\nthe avocet\n\n## Two\n\nthe stilt\n")
    write(agent.memory / "gone.md", "# Gone\n\nthe dunlin\n")
    memory = memory_of(agent, start=False)
    indexer = memory.indexer
    with memory.store.batch(seconds=3600) as indexer._batch:
        for path in ("memory/keep.md", "memory/gone.md"):
            indexer.index(indexer.folder.find(path), first=False)  # type: ignore[arg-type]
        write(agent.memory / "keep.md", "# Keep\n\nthe avocet\n\n## Two\n\nthe curlew\n")
        indexer.index(indexer.folder.find("memory/keep.md"), first=False)  # type: ignore[arg-type]
        indexer.remove("memory/gone.md")
        assert _fts_rows(agent) == set()  # nothing shows before the batch commits
    indexer._batch = None
    assert _fts_rows(agent) == _chunk_ids(agent) != set()
    assert [hit.path for hit in memory.search("curlew").results] == ["memory/keep.md"]
    assert memory.search("stilt").results == [] and memory.search("dunlin").results == []
    assert [hit.path for hit in memory.search("avocet").results] == ["memory/keep.md"]


def test_a_change_that_fails_in_a_batch_leaves_no_words(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "a.md", "# A\n\nthe whimbrel\n")
    memory = memory_of(agent, start=False)
    with memory.store.batch(seconds=3600):
        with pytest.raises(RuntimeError), memory.store.write():
            memory.store.chunks.replace([], [], [(1, 1, 0, 1, "the whimbrel", "h", 0)], [(1, "A", "the whimbrel")])
            raise RuntimeError("the change fails after its words were given")
        memory.indexer.index(memory.indexer.folder.find("memory/a.md"), first=False)  # type: ignore[arg-type]
    assert _fts_rows(agent) == _chunk_ids(agent) and len(_chunk_ids(agent)) == 2
