"""Search quality on a known-item set of real text, against plain FTS5 bm25 in the same run.

    python benchmarks/quality.py           # 500 manual pages (about 10,000 chunks), 300 questions
    python benchmarks/quality.py --quick   # the same folder, the first 100 questions

Each question is a one-line description of exactly one page; a list is as good as the rank it gives
that page (MRR@10: 1/rank within the first ten, else 0; hit@1, hit@10). Printed, each against the
anchor, plain SQLite FTS5 bm25 over the same pages (one row a page, the title four times the body,
the question's words OR'd, no rules of memory's): the words list, the meaning list and the fused
answer as search serves it; then the served answer with 0, 25, 50, 75 and 100% of the pages
embedded, with the embedding thread running on the rest, against words only in the same run; then
the same questions over MCP to `lnk-link-memory serve`, with the server's resident size.

Targets: MRR@10 >= 0.78 and >= 0.13 over plain bm25; fused >= 0.07 over the better single list;
words list no worse than plain bm25; at every share embedded, MRR@10 >= words only's and search
p50 <= 2x the fully embedded idle p50. Vectors come from a cache (benchmarks/vectorcache.py): the
first run embeds the folder's ~10,000 chunks (a quarter of an hour here), later runs none.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from knownitem import Item, known_items
from lnk_link_memory import search
from lnk_link_memory.embedding import Embedding
from lnk_link_memory.folder import Folder
from lnk_link_memory.memory import Config, Memory
from lnk_link_memory.models import LOCAL, Choice, embedder
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from vectorcache import fill

SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


class Score:
    """MRR@10, hit@1 and hit@10 of one list over the questions, and its latency."""

    def __init__(self) -> None:
        self.ranks: list[int | None] = []
        self.ms: list[float] = []

    def add(self, paths: Sequence[str], wanted: str, ms: float = 0.0) -> None:
        self.ranks.append(paths.index(wanted) + 1 if wanted in paths[:10] else None)
        self.ms.append(ms)

    @property
    def mrr(self) -> float:
        return sum(1 / r for r in self.ranks if r) / len(self.ranks)

    def hit(self, k: int) -> float:
        return sum(1 for r in self.ranks if r and r <= k) / len(self.ranks)

    @property
    def p50(self) -> float:
        return statistics.median(self.ms)

    def row(self, name: str, anchor: Score | None = None, timed: bool = True) -> str:
        versus = f" ({self.mrr - anchor.mrr:+.3f} vs plain bm25)" if anchor is not None else ""
        ms = f", p50 {self.p50:.1f} ms" if timed else ""
        return f"  {name:<44} MRR@10 {self.mrr:.3f}{versus}, hit@1 {self.hit(1):.0%}, hit@10 {self.hit(10):.0%}{ms}"


def plain_bm25(folder: Path, scratch: Path) -> Callable[[str], list[str]]:
    """The anchor: one FTS5 row a page (title, body), bm25 with the title four times the body."""
    db = sqlite3.connect(scratch / "plain.db", check_same_thread=False)
    db.execute("CREATE VIRTUAL TABLE pages USING fts5(path UNINDEXED, title, body, tokenize = 'porter unicode61')")
    rows = []
    for page in sorted(folder.rglob("*.md")):
        first, _, body = page.read_text().partition("\n")
        rows.append((str(page.relative_to(folder)), first.removeprefix("# "), body))
    db.executemany("INSERT INTO pages VALUES (?, ?, ?)", rows)
    db.commit()

    def ask(query: str) -> list[str]:
        words = re.findall(r"\w+", query.lower())
        match = " OR ".join(f'"{w}"' for w in dict.fromkeys(words))
        found = db.execute(
            "SELECT path FROM pages WHERE pages MATCH ? ORDER BY bm25(pages, 0.0, 4.0, 1.0) LIMIT 10", (match,)
        )
        return [r[0] for r in found]

    return ask


def timed(call: Callable[[], list[str]]) -> tuple[list[str], float]:
    started = time.perf_counter()
    paths = call()
    return paths, (time.perf_counter() - started) * 1000


def served(memory: Memory, query: str) -> list[str]:
    return [hit.path for hit in memory.search(query).results]


def memory_over(folder: Path, state: Path, choice: Choice) -> Memory:
    return Memory(Config(Folder.plain(folder, None), state, None, 0, choice, str(folder)))


def lists(memory: Memory, items: list[Item], anchor: Score) -> None:
    """Each list alone and the fused answer, in the engine, on a fully embedded index."""
    db = memory.store.db()
    model = embedder(memory.config.choice)
    chunks, docs, matrix = memory.cache.current()
    paths = dict(db.execute("SELECT id, path FROM documents").fetchall())
    words, meaning, fused = Score(), Score(), Score()
    for item in items:
        ranked_words = search.by_words(memory.store, item.query, None)
        ranked_meaning = search.by_meaning(chunks, docs, matrix, model.embed([item.query])[0], None)
        words.add([paths[r.doc] for r in ranked_words], item.path)
        meaning.add([paths[r.doc] for r in ranked_meaning], item.path)
        found, ms = timed(lambda item=item: served(memory, item.query))  # type: ignore[misc]
        fused.add(found, item.path, ms)
    print(words.row("words list (bm25 over chunks, memory's rules)", anchor, timed=False))
    print(meaning.row("meaning list", anchor, timed=False))
    print(fused.row("words and meaning, as search serves them", anchor))
    best = max(words.mrr, meaning.mrr)
    print(
        f"  fused {fused.mrr:.3f} vs the better single list {best:.3f}: {fused.mrr - best:+.3f} (target >= +0.07);"
        f" vs plain bm25 {fused.mrr - anchor.mrr:+.3f} (target >= +0.13); words vs plain bm25"
        f" {words.mrr - anchor.mrr:+.3f} (target >= 0)"
    )


def by_share(memory: Memory, words_only: Memory, items: list[Item], idle_p50: float) -> None:
    """The served answer with a share of the pages embedded and the embedding thread at work on the rest."""
    db = memory.store.db()
    saved = db.execute("SELECT chunk, model, vector FROM vectors").fetchall()
    docs = [r[0] for r in db.execute("SELECT path FROM documents ORDER BY path")]
    docs.sort(key=lambda p: hashlib.sha256(p.encode()).hexdigest())
    owner = dict(db.execute("SELECT c.id, d.path FROM chunks c JOIN documents d ON d.id = c.doc").fetchall())
    for share in SHARES:
        kept = set(docs[: round(share * len(docs))])
        with memory.store.write() as w:
            w.execute("DELETE FROM vectors")
            w.executemany(
                "INSERT INTO vectors(chunk, model, vector) VALUES (?, ?, ?)",
                [(c, m, v) for c, m, v in saved if owner[c] in kept],
            )
        worker = Embedding(memory.store, memory.config.choice, threading.Event())
        if share < 1.0:
            worker.start()  # the rest is being embedded while the questions are asked
        served_score, words_score = Score(), Score()
        for item in items:
            found, ms = timed(lambda item=item: served(memory, item.query))  # type: ignore[misc]
            served_score.add(found, item.path, ms)
            found, ms = timed(lambda item=item: served(words_only, item.query))  # type: ignore[misc]
            words_score.add(found, item.path, ms)
        worker.stop.set()
        worker.wake.set()
        if worker.is_alive():
            worker.join()
        ratio = served_score.p50 / idle_p50
        print(
            f"  {share:4.0%} embedded: MRR@10 {served_score.mrr:.3f} vs words only {words_score.mrr:.3f}"
            f" ({served_score.mrr - words_score.mrr:+.3f}), p50 {served_score.p50:.1f} ms = {ratio:.2f}x"
            f" the idle fully embedded p50 (target <= 2x)"
        )
    with memory.store.write() as w:
        w.execute("DELETE FROM vectors")
        w.executemany("INSERT INTO vectors(chunk, model, vector) VALUES (?, ?, ?)", saved)


def rss(pid: int) -> tuple[int, int]:
    """(resident now, peak resident) of a process, in MiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) // 1024, int(fields["VmHWM"].split()[0]) // 1024


class Served(Score):
    """A score over MCP, with the server's resident size."""

    idle_mib = 0
    after_mib = 0
    peak_mib = 0


def over_mcp(folder: Path, state: Path, items: list[Item], embeddings: str) -> Served:
    """The questions asked of `lnk-link-memory serve` over MCP, as any client would; its RSS too."""
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "lnk-link-memory"),
        args=["serve", "--folder", str(folder), "--state", str(state), "--read-only", "--embeddings", embeddings],
        env={
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/root"),
            **({"MALLOC_ARENA_MAX": os.environ["MALLOC_ARENA_MAX"]} if "MALLOC_ARENA_MAX" in os.environ else {}),
        },
    )
    score = Served()

    async def run() -> None:
        async with Client(params, read_timeout_seconds=600) as client:
            await client.call_tool("search", {"query": "warm up"})
            found = subprocess.run(["pgrep", "-n", "-f", f"serve --folder {folder}"], capture_output=True, text=True)
            pid = int(found.stdout.split()[0]) if found.stdout.strip() else 0
            score.idle_mib = rss(pid)[0] if pid else 0
            for item in items:
                started = time.perf_counter()
                result = await client.call_tool("search", {"query": item.query})
                ms = (time.perf_counter() - started) * 1000
                answer = json.loads(result.content[0].text)  # type: ignore[union-attr]
                score.add([hit["path"] for hit in answer["results"]], item.path, ms)
            score.after_mib, score.peak_mib = rss(pid) if pid else (0, 0)

    asyncio.run(run())
    return score


def while_embedding(folder: Path, state: Path, seconds: float) -> None:
    """The server's resident size while it indexes and embeds the folder from nothing, for `seconds`
    (all 11,000 chunks take most of an hour on two busy cores; its size levels off within minutes)."""
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "lnk-link-memory"),
        args=["serve", "--folder", str(folder), "--state", str(state), "--read-only"],
        env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root")},
    )

    async def run() -> None:
        async with Client(params, read_timeout_seconds=600) as client:
            found = subprocess.run(["pgrep", "-n", "-f", f"serve --folder {folder}"], capture_output=True, text=True)
            pid = int(found.stdout.split()[0])
            started = time.monotonic()
            status: dict[str, int] = {}
            while time.monotonic() - started < seconds:
                await asyncio.sleep(5)
                answer = await client.read_resource("memory://status")
                status = json.loads(answer.contents[0].text)  # type: ignore[union-attr]
            now, peak = rss(pid)
            print(
                f"  the server indexing and embedding the folder from nothing, {seconds:.0f} s"
                f" ({status.get('embedded', 0):,} of {status.get('chunks', 0):,} chunks embedded):"
                f" RSS {now} MiB, peak {peak} MiB (target <= 250 MiB)"
            )

    asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the first 100 questions only")
    quick = parser.parse_args().quick
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    print(f"machine: {load()} at the start (shared)")
    folder, items = known_items()
    items = items[:100] if quick else items
    with tempfile.TemporaryDirectory(prefix="lnk-memory-quality-") as scratch:
        base = Path(scratch)
        choice = Choice(LOCAL)
        memory = memory_over(folder, base / "state", choice)
        memory.store.open()
        memory.indexer.scan()
        embedded = fill(memory.store, choice)
        chunks = memory.store.chunks.count()
        print(
            f"known-item set: {len(items)} questions over {len(list(folder.rglob('*.md'))):,} manual pages"
            f" ({chunks:,} chunks; {embedded:,} embedded now, the rest from the cache)"
        )
        ask = plain_bm25(folder, base)
        anchor = Score()
        for item in items:
            found, ms = timed(lambda item=item: ask(item.query))  # type: ignore[misc]
            anchor.add(found, item.path, ms)
        print(anchor.row("plain FTS5 bm25 (the anchor)"))
        # The same index, searched by words alone (opened, not set up again: `memory` did that).
        words_only = memory_over(folder, base / "state", Choice("none"))
        words = Score()
        for item in items:
            found, ms = timed(lambda item=item: served(words_only, item.query))  # type: ignore[misc]
            words.add(found, item.path, ms)
        print(words.row("memory, words only (embeddings none)", anchor))
        print(f"    words only p50 is {words.p50 / anchor.p50:.2f}x plain FTS5's (target <= 3x)")
        memory.search("warm up")
        lists(memory, items, anchor)
        idle = Score()
        for item in items:
            found, ms = timed(lambda item=item: served(memory, item.query))  # type: ignore[misc]
            idle.add(found, item.path, ms)
        print("by share embedded (the embedding thread at work on the rest):")
        by_share(memory, words_only, items, idle.p50)
        words_only.store.close()
        memory.store.close()
        for embeddings in (LOCAL, "none"):
            remote = over_mcp(folder, base / "state", items, embeddings)
            print(remote.row(f"over MCP, embeddings {embeddings}", anchor))
            print(
                f"    the server's RSS: {remote.idle_mib} MiB idle, {remote.after_mib} MiB after the questions"
                f" (peak {remote.peak_mib} MiB; target <= 150 MiB)"
            )
        while_embedding(folder, base / "fresh", 60 if quick else 240)
    print(f"machine: {load()} at the end")


if __name__ == "__main__":
    main()
