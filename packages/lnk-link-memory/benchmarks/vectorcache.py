"""Vectors for a benchmark's index, embedded once and kept outside the repository.

Embedding ten thousand chunks takes minutes on two shared cores; the benchmarks' folders are the
same from run to run, so each chunk's vector is kept in `~/.cache/lnk-bench/embeddings.sqlite`,
keyed by the model's name and the SHA-256 of the exact text embedded. A rerun embeds only what it
hasn't seen. The vectors are the model's own: the engine would have written the same ones.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from lnk_link_memory.embedding import chunk_text
from lnk_link_memory.models import Choice, embedder
from lnk_link_memory.store import Store


def cache_file() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base / "lnk-bench" / "embeddings.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def fill(store: Store, choice: Choice) -> int:
    """Give every chunk of the index its vector of `choice`, from the cache or the model; how many were embedded."""
    db = store.db()
    rows = db.execute(
        "SELECT c.id, c.text, d.title, c.title FROM chunks c JOIN documents d ON d.id = c.doc"
        " LEFT JOIN vectors v ON v.chunk = c.id AND v.model = ? WHERE v.chunk IS NULL",
        (choice.name,),
    ).fetchall()
    texts = [chunk_text(title, body, bool(is_title)) for _, body, title, is_title in rows]
    keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
    with sqlite3.connect(cache_file(), timeout=60) as cache:
        cache.execute(
            "CREATE TABLE IF NOT EXISTS vectors(model TEXT, hash TEXT, vector BLOB, PRIMARY KEY(model, hash))"
        )
        known: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            known.update(
                cache.execute(
                    f"SELECT hash, vector FROM vectors WHERE model = ? AND hash IN ({marks})", (choice.name, *part)
                ).fetchall()
            )
        missing = sorted(
            {k: t for k, t in zip(keys, texts, strict=True) if k not in known}.items(), key=lambda p: len(p[1])
        )
        if missing:
            model = embedder(choice)
            started = time.monotonic()
            batches = [missing[i : i + model.batch] for i in range(0, len(missing), model.batch)]
            # Two at a time: each run takes one core (models.py).
            with ThreadPoolExecutor(max_workers=2) as pool:
                for number, (batch, vectors) in enumerate(
                    zip(batches, pool.map(lambda b: model.embed([t for _, t in b]), batches), strict=True)
                ):
                    fresh = [
                        (choice.name, key, np.asarray(vector, dtype=np.float32).tobytes())
                        for (key, _), vector in zip(batch, vectors, strict=True)
                    ]
                    cache.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", fresh)
                    known.update((key, vector) for _, key, vector in fresh)
                    if number % 200 == 0:
                        cache.commit()
                        done = sum(len(b) for b in batches[: number + 1])
                        rate = done / max(time.monotonic() - started, 1e-9)
                        print(
                            f"  embedding for the cache: {done:,} of {len(missing):,} ({rate:.0f} chunks/s)", flush=True
                        )
    with store.write() as w:
        w.executemany(
            "INSERT INTO vectors(chunk, model, vector) VALUES (?, ?, ?)",
            [(row[0], choice.name, known[key]) for row, key in zip(rows, keys, strict=True)],
        )
    return len(missing)
