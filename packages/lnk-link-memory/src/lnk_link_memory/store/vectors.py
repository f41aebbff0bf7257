"""The vectors table: one vector per chunk, with the model that made it and the counter's value
when it was written (seq), so a reader holding vectors reads only those newer than its own.

Written by hand: a vector goes in only while its chunk still holds the words it was made of, a
condition sqlite-utils' insert has no words for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from lnk_link_memory.store.table import Table

Pending = tuple[int, str, str, str, int]
"""A chunk to embed: id, hash, text, its document's title, title (1 for a title chunk)."""
Stored = tuple[int, int, bytes, int]
"""A vector as read: chunk, its document, the vector's bytes, seq."""


class Vectors(Table):
    def pending(self, model: str, after: int, limit: int) -> list[Pending]:
        """The next `limit` chunks after id `after` with no vector of `model`, in order of id."""
        return [
            (int(r[0]), r[1], r[2], r[3], int(r[4]))
            for r in self._db.execute(
                "SELECT c.id, c.hash, c.text, d.title, c.title FROM chunks c JOIN documents d ON d.id = c.doc"
                " LEFT JOIN vectors v ON v.chunk = c.id AND v.model = ?"
                " WHERE c.id > ? AND v.chunk IS NULL ORDER BY c.id LIMIT ?",
                (model, after, limit),
            )
        ]

    def put(self, model: str, made: Sequence[tuple[int, str, bytes]]) -> None:
        """(chunk, the hash of the words it was made of, vector) each: kept only where the chunk still
        has that hash, so a chunk that changed while it was embedded gets no vector of its old words."""
        for chunk, chunk_hash, vector in made:
            self._db.execute("DELETE FROM vectors WHERE chunk = ?", (chunk,))
            self._db.execute(
                "INSERT INTO vectors(chunk, model, vector) SELECT ?, ?, ?"
                " WHERE EXISTS (SELECT 1 FROM chunks WHERE id = ? AND hash = ?)",
                (chunk, model, vector, chunk, chunk_hash),
            )

    def count(self, model: str) -> int:
        return int(self._db.execute("SELECT count(*) FROM vectors WHERE model = ?", (model,)).fetchone()[0])

    def chunks(self, model: str, after: int | None = None) -> Iterator[int]:
        """The chunks with a vector of `model` (written after seq `after`, if given)."""
        if after is None:
            rows = self._db.execute("SELECT chunk FROM vectors WHERE model = ?", (model,))
        else:
            rows = self._db.execute("SELECT chunk FROM vectors WHERE model = ? AND seq > ?", (model, after))
        return (row[0] for row in rows)

    def newer(self, model: str, after: int, block: int) -> Iterator[list[Stored]]:
        """The vectors of `model` written after seq `after`, in the order written, `block` at a time."""
        cursor = self._db.execute(
            "SELECT v.chunk, c.doc, v.vector, v.seq FROM vectors v JOIN chunks c ON c.id = v.chunk "
            "WHERE v.model = ? AND v.seq > ? ORDER BY v.seq",
            (model, after),
        )
        while rows := cursor.fetchmany(block):
            yield rows
