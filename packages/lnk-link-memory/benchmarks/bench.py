"""Link Memory's figures: indexing, search latency, vector compare, embedding rate, engine memory.

    python benchmarks/bench.py            # the sizes the targets are stated at (about 15 minutes)
    python benchmarks/bench.py --quick    # smaller folders, a first look (about 3 minutes)

Targets: hybrid search p50 <= 60 ms at 100k chunks; embedding >= 90% of the bare model's rate;
ten agents' peak RSS <= 1.3x one agent's (one engine per owner).

Embedding 100,000 chunks takes about an hour on two cores, so the 100k-chunk index gets real
vectors of the model for a sample of its chunks, each reused across the rest: search latency
doesn't depend on which vectors they are.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from corpus import real_text
from knownitem import known_items
from lnk_link_memory import search
from lnk_link_memory.embedding import Embedding, chunk_text
from lnk_link_memory.folder import Folder
from lnk_link_memory.memory import Config, Memory
from lnk_link_memory.models import LOCAL, Choice, choose, embedder
from lnk_link_memory.vectors import compare
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from quality import over_mcp, plain_bm25

from link_plugin import memory as contract
from link_plugin.calls import PluginProgram
from link_plugin.contract import Kind
from link_plugin.layout import AgentFolder

# Real words, from the documents the quality test searches; then made-up rarer ones.
QUALITY = Path(__file__).resolve().parent.parent / "tests" / "quality"
WORDS = sorted({w for p in QUALITY.rglob("*.md") for w in re.findall(r"[a-z]+", p.read_text().lower())})

QUESTIONS = [
    "when is the dentist appointment",
    "budget for the garden project",
    "train tickets to the airport",
    "what did my sister say about the holiday",
    "mortgage and insurance documents",
    "recipe with tomato and basil",
    "notes from the client meeting",
    "marathon running plan",
]


# Text as people write it: a few words very often, most words rarely (Zipf), from a large vocabulary.
VOCABULARY = WORDS + [f"term{n}" for n in range(20_000)]
CUMULATIVE = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(VOCABULARY))))


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(VOCABULARY, cum_weights=CUMULATIVE, k=n)).capitalize() + "."


def make_folder(root: Path, documents: int, sections: int, seed: int = 1) -> AgentFolder:
    """An agent folder of `documents` markdown documents, each of `sections` chunks."""
    rng = random.Random(seed)
    agent = AgentFolder(root)
    agent.create()
    for d in range(documents):
        parts = [f"# {sentence(rng, 4)[:-1]} {d}"]
        for s in range(sections):
            parts.append(f"## Part {s} {rng.choice(WORDS)}\n\n" + " ".join(sentence(rng, 14) for _ in range(6)))
        folder = agent.memory / f"topic-{d % 50:02}"
        folder.mkdir(exist_ok=True)
        (folder / f"note-{d:05}.md").write_text("\n\n".join(parts) + "\n")
    return agent


def memory_over(agent: AgentFolder, choice: Choice) -> Memory:
    config = Config(Folder.agent(agent.root, None), agent.memory_state("link"), None, 4096, choice, str(agent.root))
    return Memory(config)


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def timed(call: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def bench_indexing(base: Path, documents: int, sections: int) -> Memory:
    agent = make_folder(base / f"agent-{documents}", documents, sections)
    memory = memory_over(agent, Choice("none"))
    memory.store.open()
    started = time.perf_counter()
    memory.indexer.scan()
    seconds = time.perf_counter() - started
    chunks = memory.store.chunks.count()
    print(f"words-only indexing, {documents:,} documents ({chunks:,} chunks): {documents / seconds:,.0f} documents/s")
    return memory


def bench_search(memory: Memory, label: str, runs: int) -> tuple[float, float]:
    rng = random.Random(7)
    queries = [rng.choice(QUESTIONS) for _ in range(runs)]
    iterator = iter(queries * 2)
    memory.search(queries[0])  # warm: vectors loaded, model loaded
    p50, p95 = percentiles(timed(lambda: memory.search(next(iterator)), runs))
    print(f"search {label}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    return p50, p95


def hybrid_parts(memory: Memory, queries: list[str], runs: int) -> None:
    """Where a hybrid search's time goes: each part alone, p50 (words run beside the query's embedding
    and comparing; the rest after both)."""
    store = memory.store
    model = embedder(Choice(LOCAL))
    chunks, docs, matrix = memory.cache.current()
    embedded = memory.cache.embedded()
    vector = model.embed([queries[0]])[0]
    words = search.by_words(store, queries[0], None)
    meaning = search.by_meaning(chunks, docs, matrix, vector, None)
    found = search.rank(store, words, meaning, embedded)
    asked = itertools.cycle(queries)
    parts = {
        "words (FTS5 bm25)": lambda: search.by_words(store, next(asked), None),
        "query embedding": lambda: model.embed([next(asked)]),
        "meaning (compare and top documents)": lambda: search.by_meaning(chunks, docs, matrix, vector, None),
        "fusing, ties and copies": lambda: search.rank(store, words, meaning, embedded),
        "passages": lambda: store.chunks.passages([f.chunk for f in found[:10]]),
    }
    for name, call in parts.items():
        p50, _ = percentiles(timed(call, runs))
        print(f"    of which {name}: p50 {p50:.1f} ms")


def timed_each(call: Callable[[str], object], queries: list[str]) -> list[float]:
    samples = []
    for query in queries:
        started = time.perf_counter()
        call(query)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def memory_over_folder(folder: Path, state: Path, choice: Choice) -> Memory:
    return Memory(Config(Folder.plain(folder, None), state, None, 0, choice, str(folder)))


def give_vectors(memory: Memory, sample: int) -> None:
    """Real vectors of the model for `sample` chunks, reused across every chunk of the index."""
    db = memory.store.db()
    rows = db.execute(
        "SELECT c.id, c.text, d.title, c.title FROM chunks c JOIN documents d ON d.id = c.doc ORDER BY c.id"
    ).fetchall()
    model = embedder(Choice(LOCAL))
    texts = [chunk_text(title, body, bool(is_title)) for _, body, title, is_title in rows[:sample]]
    vectors = np.concatenate([model.embed(texts[i : i + model.batch]) for i in range(0, len(texts), model.batch)])
    with memory.store.write() as w:
        w.executemany(
            "INSERT INTO vectors(chunk, model, vector) VALUES (?, ?, ?)",
            ((chunk, LOCAL, vectors[i % len(vectors)].tobytes()) for i, (chunk, *_) in enumerate(rows)),
        )


def bench_compare(chunks: int) -> None:
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((chunks, 384), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = matrix[0].copy()
    p50, p95 = percentiles(timed(lambda: compare(matrix, query), 50))
    print(f"vector compare, {chunks:,} chunks x 384: p50 {p50:.1f} ms, p95 {p95:.1f} ms")


def bench_embedding(base: Path, documents: int, rounds: int = 3) -> float:
    """Memory's background embedding against the bare model on the same chunks, batches and order.

    The machine is shared, so the two take turns, `rounds` times, and the medians are compared."""
    agent = make_folder(base / "agent-embed", documents, 3, seed=5)
    memory = memory_over(agent, Choice(LOCAL))
    memory.store.open()
    memory.indexer.scan()
    db = memory.store.db()
    rows = db.execute("SELECT c.text, d.title, c.title FROM chunks c JOIN documents d ON d.id = c.doc").fetchall()
    texts = sorted((chunk_text(title, body, bool(t)) for body, title, t in rows), key=len)
    model = embedder(Choice(LOCAL))
    model.embed(texts[: model.batch])
    bare: list[float] = []
    background: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        for i in range(0, len(texts), model.batch):
            model.embed(texts[i : i + model.batch])
        bare.append(len(texts) / (time.perf_counter() - started))
        db.execute("DELETE FROM vectors")
        worker = Embedding(memory.store, Choice(LOCAL), threading.Event())
        started = time.perf_counter()
        worker.start()
        while db.execute("SELECT count(*) FROM vectors").fetchone()[0] < len(texts):
            time.sleep(0.01)
        background.append(len(texts) / (time.perf_counter() - started))
        worker.stop.set()
        worker.wake.set()
        worker.join()
    engine, alone = statistics.median(background), statistics.median(bare)
    print(
        f"embedding, {len(texts):,} chunks: memory {engine:.1f} chunks/s, bare model {alone:.1f} chunks/s"
        f" = {engine / alone:.0%} of the bare rate (target >= 90%)"
    )
    return engine / alone


def _peak_rss(pid: int) -> tuple[int, int]:
    """(peak, now) resident bytes of a process."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmHWM"].split()[0]) * 1024, int(fields["VmRSS"].split()[0]) * 1024


BARE_MODEL = """
from pathlib import Path
from lnk_link_memory.models import LOCAL, Choice, embedder
model = embedder(Choice(LOCAL))
for text in ["garden budget", "the quarterly tax return deadline"] * 20:
    model.embed([text])
fields = dict(l.split(":", 1) for l in Path("/proc/self/status").read_text().splitlines() if ":" in l)
print(int(fields["VmRSS"].split()[0]) * 1024)
"""


def bare_model_rss() -> int:
    """The anchor for the engine's size: a Python process with the model loaded and run, and nothing else."""
    return int(subprocess.run([sys.executable, "-c", BARE_MODEL], capture_output=True, text=True, check=True).stdout)


def bench_agents(base: Path, agents: int, documents: int, owner: str) -> int:
    """Peak RSS of the owner's one engine serving `agents` agents, each fully indexed and embedded."""
    folders = [make_folder(base / owner / f"agent-{a}", documents, 2, seed=a) for a in range(agents)]
    program = PluginProgram("lnk-link-memory")
    sockets: set[Path] = set()

    def server(folder: AgentFolder) -> StdioServerParameters:
        env = {contract.ENV_OWNER: owner, contract.ENV_NOTES: str(folder.notes)}
        answer = program.ask_as(
            contract.MemoryCommand,
            Kind.MEMORY,
            "command",
            (str(folder.root), str(folder.memory_state("link"))),
            env=env,
        )
        assert isinstance(answer, contract.MemoryCommand)
        sockets.add(Path(answer.argv[answer.argv.index("--socket") + 1]))
        return StdioServerParameters(
            command=answer.argv[0], args=answer.argv[1:], env={**answer.env, "PATH": os.environ["PATH"]}
        )

    async def run() -> tuple[int, int]:
        async with contextlib.AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(Client(server(f), read_timeout_seconds=600)) for f in folders]
            while True:
                statuses = [await c.read_resource("memory://status") for c in clients]
                done = [json.loads(s.contents[0].text) for s in statuses]  # type: ignore[union-attr]
                if all(s["documents"] == documents and s["embedded"] == s["chunks"] for s in done):
                    break
                await asyncio.sleep(0.5)
            for client in clients:
                for question in QUESTIONS:
                    await client.call_tool("search", {"query": question})
            (engine,) = sockets  # one owner, one engine
            return _peak_rss(_engine_pid(engine))

    peak, now = asyncio.run(run())
    print(
        f"engine RSS, {agents} agent(s) of one owner, {documents} documents each, indexed, embedded and"
        f" searched: {now / 2**20:.0f} MiB after the searches (peak {peak / 2**20:.0f} MiB)"
    )
    return peak


def _engine_pid(path: Path) -> int:
    import socket
    import struct

    from lnk_link_memory.sockets import address

    with socket.socket(socket.AF_UNIX) as client, address(path) as where:
        client.connect(where)
        pid, _, _ = struct.unpack("3i", client.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        return int(pid)


def bench_real_text(base: Path, documents: int, sample: int) -> None:
    """Search at about 100,000 chunks of real text (manual pages, then Debian changelogs), words only
    against plain FTS5 over the same folder, and hybrid in the engine and over MCP."""
    folder = real_text(documents)
    memory = memory_over_folder(folder, base / "real-state", Choice("none"))
    memory.store.open()
    started = time.perf_counter()
    memory.indexer.scan()
    seconds = time.perf_counter() - started
    chunks = memory.store.chunks.count()
    print(f"real text: {documents:,} documents, {chunks:,} chunks, indexed by words in {seconds:.0f} s")
    _, items = known_items()
    queries = [item.query for item in items]
    ask = plain_bm25(folder, base)
    plain = percentiles(timed_each(ask, queries))[0]
    words = percentiles(timed_each(lambda q: memory.search(q), queries))[0]
    print(f"  plain FTS5 bm25 (the anchor): p50 {plain:.1f} ms")
    print(f"  memory, words only: p50 {words:.1f} ms = {words / plain:.2f}x plain FTS5 (target <= 3x)")
    give_vectors(memory, sample)
    hybrid = memory_over_folder(folder, base / "real-state", Choice(LOCAL))
    hybrid.store.open()
    hybrid.search(queries[0])
    p50, p95 = percentiles(timed_each(lambda q: hybrid.search(q), queries))
    print(f"  memory, hybrid, in the engine: p50 {p50:.1f} ms, p95 {p95:.1f} ms ({p50 / 60:.2f}x the 60 ms target)")
    hybrid_parts(hybrid, queries, 50)
    hybrid.store.close()
    memory.store.close()
    served = over_mcp(folder, base / "real-state", items, LOCAL)
    print(f"  memory, hybrid, over MCP: p50 {served.p50:.1f} ms ({served.p50 / 60:.2f}x the 60 ms target)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller folders: a first look, not the targets")
    quick = parser.parse_args().quick
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    choose(None, None)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start (shared)")
    with tempfile.TemporaryDirectory(prefix="lnk-memory-bench-") as scratch:
        base = Path(scratch)
        small = bench_indexing(base, 1_000, 3)
        bench_search(small, "words only, 1,000 documents", 100)
        bench_real_text(base, 2_000 if quick else 7_600, 200 if quick else 500)
        bench_compare(100_000)
        ratio = bench_embedding(base, 60 if quick else 200)
        print(f"  embedding: {ratio / 0.9:.2f}x the 90% target")
        anchor = bare_model_rss()
        print(f"the bare model in a Python process of its own (the anchor): {anchor / 2**20:.0f} MiB")
        one = bench_agents(base, 1, 20 if quick else 100, "one@bench")
        ten = bench_agents(base, 10, 20 if quick else 100, "ten@bench")
        print(f"  ten agents' peak RSS is {ten / one:.2f}x one agent's (target <= 1.3x)")
        row = {
            "row": "memory engine RSS",
            "figure": f"{one / 2**20:.0f} MiB at its peak, one agent; {ten / 2**20:.0f} MiB, ten agents",
            "anchor": f"{one / anchor:.2f}x the bare model in a process of its own ({anchor / 2**20:.0f} MiB)",
            "goal": "within the whole agent's 250 MiB",
        }
        print("table-row " + json.dumps(row), flush=True)  # read by `./dev run bench all`
    print(f"machine: load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
