"""The chunks table and its words (the FTS5 table `fts`, one row per chunk by the chunk's id).

Written by hand: full-text queries are FTS5's own SQL, and a document's chunks go in by
`executemany`, which costs a tenth of sqlite-utils' insert for the few rows a document has.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from lnk_link_memory.store.documents import SINCE
from lnk_link_memory.store.table import Table

_BM25 = "bm25(fts, 4.0, 1.0)"
"""The title four times the body. Called by name: the table's configured rank (the same function)
costs half as much again for each chunk it ranks."""

Moved = tuple[int, int, int]
"""A kept chunk's new place: ord, line, id."""
Added = tuple[int, int, int, int, str, str, int]
"""A new chunk: id, doc, ord, line, text, hash, title (1 for a title chunk)."""
Words = tuple[int, str, str]
"""A chunk's words as the full-text table holds them: id, title, body."""


class Chunks(Table):
    def by_words(self, match: str, limit: int, since: float | None) -> list[tuple[int, float, int]]:
        """(doc, bm25 score, chunk) of the best `limit` chunks matching an FTS5 query, best first
        (bm25 scores are negative: the lowest is the best)."""
        if since is None:
            # Ranked in the full-text table alone, then joined: far less work than joining every match.
            return self._db.execute(
                f"SELECT c.doc, s.score, s.rowid FROM (SELECT rowid, {_BM25} AS score FROM fts WHERE fts MATCH ?"
                " ORDER BY score LIMIT ?) s JOIN chunks c ON c.id = s.rowid ORDER BY s.score",
                (match, limit),
            ).fetchall()
        return self._db.execute(
            f"SELECT c.doc, {_BM25} AS score, fts.rowid FROM fts JOIN chunks c ON c.id = fts.rowid"
            f" JOIN documents d ON d.id = c.doc WHERE fts MATCH ? AND {SINCE} ORDER BY score LIMIT ?",
            (match, since, since, limit),
        ).fetchall()

    def of(self, doc: int) -> list[tuple[int, str]]:
        """(id, hash) of a document's chunks."""
        return self._db.execute("SELECT id, hash FROM chunks WHERE doc = ?", (doc,)).fetchall()

    def next_id(self) -> int:
        """The id the next new chunk gets: call it within the write that adds the chunks, which holds
        the write lock, so no other writer takes the same."""
        return int(self._db.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]) + 1

    def replace(
        self, gone: Sequence[int], moved: Sequence[Moved], added: Sequence[Added], words: Sequence[Words]
    ) -> None:
        """A document's chunks made again: those `gone` dropped (their vectors and words with them, by
        the triggers), those `moved` kept in a new place with their vectors, those `added` new; then
        the words of the moved and the new (within a batch, when it commits). Called only in the
        change that writes the document's row, which moves the change counter for its chunks."""
        db = self._db
        db.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in gone])
        db.executemany("UPDATE chunks SET ord = ?, line = ? WHERE id = ?", moved)
        db.executemany("DELETE FROM fts WHERE rowid = ?", [(chunk_id,) for _, _, chunk_id in moved])
        db.executemany("INSERT INTO chunks(id, doc, ord, line, text, hash, title) VALUES (?,?,?,?,?,?,?)", added)
        self._store.words_to_index(list(words))

    def put_words(self, words: Sequence[Words]) -> None:
        """Chunks' words into the full-text table: for each chunk its last words given, and only
        for a chunk still there (one dropped since, by a later change of the same batch, gets none)."""
        latest = {row[0]: row for row in words}
        # Told apart first: an INSERT ... SELECT into FTS5 took three times as long as its VALUES.
        there = self._db.execute(
            "SELECT id FROM chunks WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(list(latest)),)
        )
        rows = [latest[chunk_id] for (chunk_id,) in there]
        self._db.executemany("INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)", rows)

    def passages(self, ids: Sequence[int]) -> dict[int, tuple[int, str]]:
        """Each chunk's line and text; for a title chunk, its document's first passage."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._db.execute(
            f"SELECT c.id, c.line, c.text, c.title, (SELECT f.line || char(0) || f.text FROM chunks f"
            f" WHERE f.doc = c.doc AND f.title = 0 ORDER BY f.ord LIMIT 1) FROM chunks c WHERE c.id IN ({marks})",
            tuple(ids),
        ).fetchall()
        out: dict[int, tuple[int, str]] = {}
        for chunk_id, line, body, is_title, first in rows:
            if is_title:
                first_line, _, first_text = (first or "1\x00").partition("\x00")
                out[int(chunk_id)] = (int(first_line), first_text)
            else:
                out[int(chunk_id)] = (int(line), body)
        return out

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM chunks").fetchone()[0])
