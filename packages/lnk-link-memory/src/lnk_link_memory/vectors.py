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
_BLOCK = 1024
"""Vectors read from the index at a time."""
_SPARE = 16
"""The matrix keeps room for a sixteenth more vectors than it holds."""


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
        vectors = self._store.vectors
        with self._store.read():
            counter = self._store.counter()
            fresh = np.fromiter(vectors.chunks(self._model, after=self._seq), dtype=np.int64)
            total = vectors.count(self._model)
            if len(fresh) or total != self._count:
                # Something was added, changed or dropped: keep only the chunks the file still has.
                live = np.fromiter(vectors.chunks(self._model), dtype=np.int64)
                self._apply(fresh, live)
        self._counter = counter

    def _apply(self, fresh: Ids, live: Ids) -> None:
        """Keep what is still there, then read the new vectors straight into place, a block at a time:
        the index's rows are never all held at once beside the matrix they fill."""
        n = self._count
        held = self._chunks[:n]
        keep = np.flatnonzero(np.isin(held, live) & ~np.isin(held, fresh))
        blocks = self._store.vectors.newer(self._model, self._seq, _BLOCK)
        block = next(blocks, [])
        width = len(block[0][2]) // 4 if block else (self._matrix.shape[1] if self._matrix.ndim == 2 else 0)
        if block and self._matrix.shape[1:] != (width,):
            keep = np.zeros(0, dtype=np.int64)  # another width: another model's vectors, start again
        size = len(keep) + len(fresh)
        if size > len(self._chunks) or size < len(self._chunks) // 4 or self._matrix.shape[1:] != (width,):
            # Room for a few more, so vectors arriving while embedding seldom move the matrix.
            capacity = max(16, size + size // _SPARE)
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
        while block:
            end = k + len(block)
            chunks[k:end] = [row[0] for row in block]
            docs[k:end] = [row[1] for row in block]
            matrix[k:end] = np.frombuffer(b"".join(row[2] for row in block), dtype=np.float32).reshape(-1, width)
            self._seq = max(self._seq, int(block[-1][3]))
            k = end
            block = next(blocks, [])
        self._chunks, self._docs, self._matrix, self._count = chunks, docs, matrix, k
        self._embedded = frozenset(np.unique(docs[:k]).tolist())
