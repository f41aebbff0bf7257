"""One search: words (bm25, the title four times the body) and meaning (embeddings), merged by rank.

Each list ranks its best 50 documents; within a list, documents within a tenth of the spread of the
list's first page (its best score less its tenth) of the best score around them count as ties and
the newest comes first; the lists are merged by reciprocal rank fusion, score = sum of
1 / (60 + rank). What has no vector yet is searched by words
alone, its words rank standing for its meaning rank, so embedding never makes search worse than
words alone. Copies come once, under the shortest path.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from lnk_link_memory import text
from lnk_link_memory.limits import COPY_SHARE, COPY_WORDS, RANKED, RRF_K, SEARCH_PAGE, TIE
from lnk_link_memory.models import Vectors
from lnk_link_memory.store import Store
from lnk_link_memory.vectors import Ids, compare

_WORD_CHUNKS_FIRST = 200
_WORD_CHUNKS = 1000
_MEANING_CHUNKS = 2000
_SKETCH_AGREE = 20
"""Of 32 min-hashes, documents sharing nine in ten words (a Jaccard of 0.82 or more) agree on 26 or so
and on fewer than 20 about once in five hundred; documents merely on one subject, on far fewer."""


@dataclass(frozen=True)
class Ranked:
    doc: int
    score: float
    chunk: int


@dataclass(frozen=True)
class Doc:
    id: int
    path: str
    title: str
    kind: str
    mtime: float
    words: int
    words_hash: str
    sketch: bytes


@dataclass
class Found:
    """One result: a document, why it matched, its best chunk, and its copies."""

    doc: Doc
    score: float
    chunk: int
    words: bool
    meaning: bool
    copies: list[Doc] = field(default_factory=list)


def by_words(store: Store, query: str, since: float | None) -> list[Ranked]:
    """bm25, the title four times the body; the best chunk stands for its document.

    The best few chunks are ranked first, and more only when they hold too few documents: ranking
    a thousand chunks cost most of a search, and the best two hundred hold fifty documents for
    nearly every query."""
    match = text.match_query(query)
    if match is None:
        return []
    ranked: list[Ranked] = []
    for limit in (_WORD_CHUNKS_FIRST, _WORD_CHUNKS):
        rows = store.chunks.by_words(match, limit, since)
        ranked = _best_per_doc((int(doc), -float(score), int(chunk)) for doc, score, chunk in rows)
        if len(ranked) == RANKED or len(rows) < limit:
            break  # enough documents, or every matching chunk
    return ranked


def by_meaning(chunks: Ids, docs: Ids, matrix: Vectors, query: Vectors, allowed: set[int] | None) -> list[Ranked]:
    """The nearest chunks by cosine; each document's nearest stands for it (found in one step, not a
    loop over chunks)."""
    if len(chunks) == 0:
        return []
    scores = compare(matrix, query)
    if allowed is not None:
        scores = np.where(np.isin(docs, np.fromiter(allowed, dtype=np.int64)), scores, -np.inf)
    k = min(len(scores), _MEANING_CHUNKS)
    top = np.argpartition(scores, len(scores) - k)[len(scores) - k :]
    top = top[np.argsort(-scores[top], kind="stable")]
    top = top[np.isfinite(scores[top])]
    _, first = np.unique(docs[top], return_index=True)  # each document's first, so best, chunk
    best = top[np.sort(first)[:RANKED]]
    return [Ranked(int(d), float(s), int(c)) for d, s, c in zip(docs[best], scores[best], chunks[best], strict=True)]


def _best_per_doc(rows: Iterable[tuple[int, float, int]]) -> list[Ranked]:
    """Rows come best first: each document's first row is its best chunk."""
    ranked: dict[int, Ranked] = {}
    for doc, score, chunk in rows:
        if doc not in ranked:
            ranked[doc] = Ranked(doc, score, chunk)
            if len(ranked) == RANKED:
                break
    return list(ranked.values())


def newest_among_ties(ranked: Sequence[Ranked], mtime: dict[int, float]) -> list[Ranked]:
    """Within a tenth of the list's own spread of the best score around them, the newest document first.

    Each list is judged on its own scale, the spread of its first page (its best score less its
    tenth best): bm25's wide scores and a model's narrow cosines tie alike, and what counts as
    matching about as well is set by the documents a reader is shown, not by the long tail of the
    fifty ranked (that tail's spread tied a fused answer's first place with its third)."""
    if not ranked:
        return []
    window = (ranked[0].score - ranked[min(len(ranked), SEARCH_PAGE) - 1].score) * TIE
    ordered: list[Ranked] = []
    i = 0
    while i < len(ranked):
        lead = ranked[i].score
        j = i
        while j < len(ranked) and ranked[j].score >= lead - window:
            j += 1
        ordered.extend(sorted(ranked[i:j], key=lambda r: -mtime.get(r.doc, 0.0)))
        i = j
    return ordered


def fuse(lists: Sequence[Sequence[Ranked]]) -> dict[int, float]:
    """Reciprocal rank fusion: each document scores the sum of 1 / (60 + its rank) in each list."""
    scores: dict[int, float] = {}
    for ranked in lists:
        for rank, item in enumerate(ranked, start=1):
            scores[item.doc] = scores.get(item.doc, 0.0) + 1.0 / (RRF_K + rank)
    return scores


def words_for_meaning(
    words: Sequence[Ranked], meaning: Sequence[Ranked], embedded: Collection[int]
) -> dict[int, float]:
    """What a document with no vector yet scores by meaning: its words rank stands for its meaning
    rank, so it never loses for lacking a vector (what's embedded is searched by meaning, the rest by
    words). Nothing stands in when the meaning list is empty: the search was by words alone."""
    if not meaning:
        return {}
    return {item.doc: 1.0 / (RRF_K + rank) for rank, item in enumerate(words, start=1) if item.doc not in embedded}


def documents(store: Store, ids: Sequence[int]) -> dict[int, Doc]:
    if not ids:
        return {}
    return {row[0]: Doc(*row) for row in store.documents.ranking(ids)}


class Copies:
    """Whether two documents hold the same words: all of them, or from twenty words nine in ten.

    Their sketches rule out almost every pair at once (every pair of a search's documents compared
    in one step); the pairs left are counted word by word."""

    def __init__(self, store: Store, docs: Sequence[Doc]) -> None:
        self._store = store
        sketches = np.frombuffer(b"".join(d.sketch for d in docs), dtype=np.uint64).reshape(len(docs), text.SKETCH)
        self._maybe = (sketches[:, None, :] == sketches[None, :, :]).sum(axis=2) >= _SKETCH_AGREE
        np.fill_diagonal(self._maybe, False)
        # Nearly every document may copy none of the others: those need no look at the groups.
        self._alone: list[bool] = (~self._maybe.any(axis=1)).tolist()
        self._index = {d.id: i for i, d in enumerate(docs)}
        self._leaders: list[Doc] = []
        self._leading: list[int] = []
        self._bags: dict[int, bytes] = {}

    def group_of(self, doc: Doc) -> int | None:
        """The group (in the order they were added) whose first document this one copies, if any."""
        index = self._index[doc.id]
        if not self._alone[index] and self._leading:
            for group in np.flatnonzero(self._maybe[index][self._leading]).tolist():
                if self.same(self._leaders[group], doc):
                    return int(group)
        self._leaders.append(doc)
        self._leading.append(index)
        return None

    def same(self, a: Doc, b: Doc) -> bool:
        if a.words_hash == b.words_hash:
            return a.words > 0
        small, large = sorted((a.words, b.words))
        if small < COPY_WORDS or small < COPY_SHARE * large:
            return False
        return text.shared_words(self._bag(a), self._bag(b)) >= COPY_SHARE * large

    def _bag(self, doc: Doc) -> bytes:
        if doc.id not in self._bags:
            self._bags[doc.id] = self._store.documents.bag(doc.id)
        return self._bags[doc.id]


def rank(
    store: Store,
    words: list[Ranked],
    meaning: list[Ranked],
    embedded: Collection[int] = (),
    newest: dict[int, float] | None = None,
) -> list[Found]:
    """Both lists, ties ordered newest first, fused, copies folded under the shortest path. A document
    not `embedded` (no vector yet) counts by words in place of meaning."""
    docs = documents(store, sorted({r.doc for r in words} | {r.doc for r in meaning}))
    mtime = newest if newest is not None else {d.id: d.mtime for d in docs.values()}
    words = newest_among_ties([r for r in words if r.doc in docs], mtime)
    meaning = newest_among_ties([r for r in meaning if r.doc in docs], mtime)
    fused = fuse([words, meaning])
    for unembedded, score in words_for_meaning(words, meaning, embedded).items():
        fused[unembedded] += score
    best_word = {r.doc: r.chunk for r in words}
    best_meaning = {r.doc: r.chunk for r in meaning}
    order = sorted(fused, key=lambda d: (-fused[d], -mtime.get(d, 0.0), docs[d].path))
    copies = Copies(store, [docs[d] for d in order])
    groups: list[Found] = []
    for doc_id in order:
        doc = docs[doc_id]
        chunk = best_word.get(doc_id, best_meaning.get(doc_id, 0))
        found = Found(doc, fused[doc_id], chunk, doc_id in best_word, doc_id in best_meaning)
        index = copies.group_of(doc)
        if index is None:
            groups.append(found)
            continue
        group = groups[index]
        group.words |= found.words
        group.meaning |= found.meaning
        if (len(doc.path), doc.path) < (len(group.doc.path), group.doc.path):
            group.copies.append(group.doc)
            group.doc, group.chunk = doc, found.chunk
        else:
            group.copies.append(doc)
    return groups
