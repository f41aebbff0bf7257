"""Embedding in the background: the first index never holds up a search.

What is embedded is searched by meaning, the rest by words. A chunk keeps its vector across
restarts and across edits of its document that leave its words alone, so only what changed is
embedded again. A chunk that changed while it was being embedded gets no vector from its old words.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

from lnk_link_memory.models import Choice, ModelError, Vectors, embedder
from lnk_link_memory.store import Store, corrupt
from lnk_link_memory.store.vectors import Pending

_FETCH = 256
WRITTEN = 8
"""Vectors written to the index in one change: one each made writing cost as much as embedding."""
_ONE_AT_A_TIME = threading.Lock()
"""Every folder's background embedding takes turns, one run at a time in the process: ten agents
embedding at once held ten runs' memory (twice one agent's engine) and ran no faster on the
cores there are. A search's query is embedded at once, beside whichever run this is."""
log = logging.getLogger(__name__)


class WordsFirst:
    """Indexing words comes first: while any scan of this process writes documents, no embedding
    starts. The model takes every core it is given; a folder's words, searchable at once, would
    otherwise wait on vectors that only add to them."""

    def __init__(self) -> None:
        self._indexing = 0
        self._changed = threading.Condition()

    @contextmanager
    def indexing(self) -> Iterator[None]:
        with self._changed:
            self._indexing += 1
        try:
            yield
        finally:
            with self._changed:
                self._indexing -= 1
                self._changed.notify_all()

    def wait(self, stop: threading.Event, seconds: float = 1.0) -> None:
        """Return once no scan is indexing (or stop is set); looks again at least every `seconds`."""
        with self._changed:
            while self._indexing and not stop.is_set():
                self._changed.wait(seconds)


WORDS_FIRST = WordsFirst()


def chunk_text(title: str, body: str, is_title: bool) -> str:
    """What a chunk is embedded as: its document's title in front of it (a title chunk is the title alone)."""
    return body if is_title else f"{title}\n\n{body}"


class Embedding(threading.Thread):
    def __init__(self, store: Store, choice: Choice, on_corrupt: threading.Event) -> None:
        super().__init__(name="embedding", daemon=True)
        self._store = store
        self._choice = choice
        self._on_corrupt = on_corrupt
        self.wake = threading.Event()
        self.stop = threading.Event()
        self.error: str | None = None
        self._cursor = 0
        self._ahead = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed-ahead")

    def run(self) -> None:
        backoff = 1.0
        while not self.stop.is_set():
            try:
                done = self.step()
                self.error = None
                backoff = 1.0
            except ModelError as exc:
                self.error = str(exc)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            except Exception as exc:
                if corrupt(exc):
                    self._on_corrupt.set()
                else:
                    log.exception("embedding failed")
                    self.error = f"{type(exc).__name__}: {exc}"
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            if done == 0:
                self.wake.wait(5.0)
                self.wake.clear()
        self._ahead.shutdown(wait=False)

    def step(self) -> int:
        """Embed the next chunks lacking a vector of this model; how many were embedded."""
        rows = self._pending(self._cursor)
        if not rows and self._cursor:
            self._cursor = 0
            rows = self._pending(0)
        if not rows:
            return 0
        self._cursor = max(r[0] for r in rows)
        model = embedder(self._choice)
        rows.sort(key=lambda r: len(r[2]))
        batches = [rows[start : start + WRITTEN] for start in range(0, len(rows), WRITTEN)]

        def runs(texts: list[str]) -> Vectors:
            vectors = []
            for i in range(0, len(texts), model.batch):
                WORDS_FIRST.wait(self.stop)  # a scan begun meanwhile waits for one run at most, not a batch
                with _ONE_AT_A_TIME:
                    vectors.append(model.embed(texts[i : i + model.batch]))
            return np.concatenate(vectors)

        def embed(batch: list[Pending]) -> Future[Vectors]:
            WORDS_FIRST.wait(self.stop)
            return self._ahead.submit(runs, [chunk_text(r[3], r[2], bool(r[4])) for r in batch])

        # The next batch is embedded while this one's vectors are written: the model never waits on the index.
        coming = embed(batches[0])
        for index, batch in enumerate(batches):
            vectors = coming.result()
            if index + 1 < len(batches) and not self.stop.is_set():
                coming = embed(batches[index + 1])
            self._put(batch, vectors)
            if self.stop.is_set():
                break
        return len(rows)

    def _pending(self, after: int) -> list[Pending]:
        return self._store.vectors.pending(self._choice.name, after, _FETCH)

    def _put(self, batch: list[Pending], vectors: np.ndarray) -> None:
        made = [
            (chunk, chunk_hash, np.asarray(vector, dtype=np.float32).tobytes())
            for (chunk, chunk_hash, *_), vector in zip(batch, vectors, strict=True)
        ]
        with self._store.write():
            self._store.vectors.put(self._choice.name, made)
