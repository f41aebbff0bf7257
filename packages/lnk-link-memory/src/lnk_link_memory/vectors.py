"""Vectors kept in memory between searches, read again whenever the index's change counter moved.

Comparing is one function, so another store can replace it. New and changed vectors are read by
their sequence number; a vector gone from the file (its chunk changed or deleted) is dropped, so
an old vector is never used.
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

from lnk_link_memory.models import Vectors
from lnk_link_memory.store import Store

Ids = npt.NDArray[np.int64]


def compare(matrix: Vectors, query: Vectors) -> npt.NDArray[np.float32]:
    """Cosine similarity of each row with the query (both L2-normalised)."""
    return np.asarray(matrix @ query, dtype=np.float32)


class VectorCache:
    def __init__(self, store: Store, model: str) -> None:
        self._store = store
        self._model = model
        self._lock = threading.Lock()
        self._counter = -1
        self._seq = 0
        self._chunks: Ids = np.zeros(0, dtype=np.int64)
        self._docs: Ids = np.zeros(0, dtype=np.int64)
        self._matrix: Vectors = np.zeros((0, 0), dtype=np.float32)
        self._count = 0
        self._embedded: frozenset[int] = frozenset()

    def current(self) -> tuple[Ids, Ids, Vectors]:
        """(chunk ids, their document ids, their vectors) as the index holds them now."""
        with self._lock:
            if self._store.counter() != self._counter:
                self._refresh()
            n = self._count
            return self._chunks[:n], self._docs[:n], self._matrix[:n]

    def embedded(self) -> frozenset[int]:
        """The documents with at least one vector, as of the last `current()`."""
        with self._lock:
            return self._embedded

    def forget(self) -> None:
        with self._lock:
            self._counter = -1
            self._seq = 0
            self._count = 0
            self._embedded = frozenset()

    def _refresh(self) -> None:
        with self._store.read() as db:
            counter = int(db.execute("SELECT n FROM counter").fetchone()[0])
            rows = db.execute(
                "SELECT v.chunk, c.doc, v.vector, v.seq FROM vectors v JOIN chunks c ON c.id = v.chunk "
                "WHERE v.model = ? AND v.seq > ? ORDER BY v.seq",
                (self._model, self._seq),
            ).fetchall()
            total = int(db.execute("SELECT count(*) FROM vectors WHERE model = ?", (self._model,)).fetchone()[0])
            live: set[int] | None = None
            if rows or total != self._count:
                # Something was added, changed or dropped: keep only the chunks the file still has.
                live = {int(r[0]) for r in db.execute("SELECT chunk FROM vectors WHERE model = ?", (self._model,))}
        if live is not None:
            self._apply(rows, live)
        self._counter = counter

    def _apply(self, rows: list[tuple[int, int, bytes, int]], live: set[int]) -> None:
        n = self._count
        fresh = {int(r[0]) for r in rows}
        keep = np.array(
            [i for i, chunk in enumerate(self._chunks[:n].tolist()) if chunk in live and chunk not in fresh],
            dtype=np.int64,
        )
        added = [r for r in rows if int(r[0]) in live]
        width = len(added[0][2]) // 4 if added else (self._matrix.shape[1] if self._matrix.ndim == 2 else 0)
        if added and self._matrix.shape[1:] != (width,):
            keep = np.zeros(0, dtype=np.int64)  # another width: another model's vectors, start again
        size = len(keep) + len(added)
        capacity = max(size, 16)
        if capacity > len(self._chunks) or size < len(self._chunks) // 4 or self._matrix.shape[1:] != (width,):
            capacity = max(capacity, int(size * 1.25))
            chunks = np.zeros(capacity, dtype=np.int64)
            docs = np.zeros(capacity, dtype=np.int64)
            matrix = np.zeros((capacity, width), dtype=np.float32)
        else:
            chunks, docs, matrix = self._chunks, self._docs, self._matrix
        k = len(keep)
        if k:
            chunks[:k] = self._chunks[keep]
            docs[:k] = self._docs[keep]
            matrix[:k] = self._matrix[keep]
        for offset, (chunk, doc, blob, seq) in enumerate(added, start=k):
            chunks[offset] = chunk
            docs[offset] = doc
            matrix[offset] = np.frombuffer(blob, dtype=np.float32)
            self._seq = max(self._seq, int(seq))
        if rows:
            self._seq = max(self._seq, max(int(r[3]) for r in rows))
        self._chunks, self._docs, self._matrix, self._count = chunks, docs, matrix, size
        self._embedded = frozenset(np.unique(docs[:size]).tolist())
