"""The documents table: one row per indexed document, what it is called and what it holds.

Every call is SQL written out: each runs once per document (or per search), where sqlite-utils'
insert cost about 85 microseconds of CPU more than its statement (for each new document, about 5%
of indexing it) and its update read the whole row first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lnk_link_memory.store.table import Table

SINCE = "((d.before = 0 AND d.first_seen > ?) OR d.changed > ?)"
"""Documents (as d) first seen after a moment (not there before) or changed after it; the moment twice."""

DocumentRow = tuple[int, str, str, str, float, int, str, bytes]
"""id, path, title, kind, mtime, words, words_hash, sketch: what ranking and copies need."""


class Documents(Table):
    def signatures(self) -> dict[str, str]:
        """Each document's path and the signature (size, time) it was indexed at."""
        return dict(self._db.execute("SELECT path, signature FROM documents").fetchall())

    def id_and_hash(self, path: str) -> tuple[int, str] | None:
        row = self._db.execute("SELECT id, hash FROM documents WHERE path = ?", (path,)).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def id_and_stem(self, path: str) -> tuple[int, str] | None:
        row = self._db.execute("SELECT id, stem FROM documents WHERE path = ?", (path,)).fetchone()
        return None if row is None else (int(row[0]), str(row[1]))

    def title(self, path: str) -> str | None:
        row = self._db.execute("SELECT title FROM documents WHERE path = ?", (path,)).fetchone()
        return None if row is None else str(row[0])

    def title_and_text(self, path: str) -> tuple[str, str | None] | None:
        """A document's title and, for a PDF or Word document, its extracted text."""
        row = self._db.execute("SELECT title, text FROM documents WHERE path = ?", (path,)).fetchone()
        return None if row is None else (str(row[0]), row[1])

    def has(self, path: str) -> bool:
        return self._db.execute("SELECT 1 FROM documents WHERE path = ?", (path,)).fetchone() is not None

    def named(self, name: str) -> list[tuple[str, str]]:
        """(path, stem) of the documents whose file is called `name`, the shortest path first."""
        return self._db.execute(
            "SELECT path, stem FROM documents WHERE name = ? ORDER BY length(path), path", (name,)
        ).fetchall()

    def add(self, values: dict[str, object]) -> int:
        """A new document, its columns named by `values`; its id."""
        columns, marks = ", ".join(values), ", ".join("?" * len(values))
        inserted = self._db.execute(f"INSERT INTO documents({columns}) VALUES ({marks})", tuple(values.values()))
        return int(inserted.lastrowid or 0)

    def update(self, doc: int, values: dict[str, object]) -> None:
        """A document's words changed: its new values, columns named by `values`."""
        assignments = ", ".join(f"{column} = ?" for column in values)
        self._db.execute(f"UPDATE documents SET {assignments} WHERE id = ?", (*values.values(), doc))

    def touch(self, doc: int, signature: str, mtime: float) -> None:
        """The file changed but its words didn't: only when it was last seen changing."""
        self._db.execute("UPDATE documents SET signature = ?, mtime = ? WHERE id = ?", (signature, mtime, doc))

    def remove(self, path: str) -> tuple[str, str] | None:
        """Drop a document (its chunks, vectors, words and links go with it, by the triggers); the
        title and kind it had, or None when there was none."""
        row = self._db.execute("SELECT title, kind FROM documents WHERE path = ?", (path,)).fetchone()
        if row is None:
            return None
        self._db.execute("DELETE FROM documents WHERE path = ?", (path,))
        return str(row[0]), str(row[1])

    def bags(self) -> list[tuple[int, bytes]]:
        return self._db.execute("SELECT id, bag FROM documents").fetchall()

    def set_sketches(self, sketches: Iterable[tuple[bytes, int]]) -> None:
        """(sketch, id) for each document."""
        self._db.executemany("UPDATE documents SET sketch = ? WHERE id = ?", sketches)

    def words(self) -> list[tuple[int, str]]:
        """(id, text) of every document: a PDF's or Word document's extracted text, or else its chunks'
        (the title from its name left out), in order."""
        return self._db.execute(
            "SELECT d.id, coalesce(d.text, (SELECT group_concat(text, char(10)) FROM"
            " (SELECT text FROM chunks WHERE doc = d.id AND title = 0 ORDER BY ord)), '') FROM documents d"
        ).fetchall()

    def set_fingerprints(self, fingerprints: Iterable[tuple[int, str, bytes, bytes, int]]) -> None:
        """(words, words_hash, bag, sketch, id) for each document."""
        self._db.executemany(
            "UPDATE documents SET words = ?, words_hash = ?, bag = ?, sketch = ? WHERE id = ?", fingerprints
        )

    def bag(self, doc: int) -> bytes:
        row = self._db.execute("SELECT bag FROM documents WHERE id = ?", (doc,)).fetchone()
        return bytes(row[0]) if row else b""

    def ranking(self, ids: Sequence[int]) -> list[DocumentRow]:
        """What ranking and telling copies need of these documents."""
        marks = ",".join("?" * len(ids))
        rows = self._db.execute(
            f"SELECT id, path, title, kind, mtime, words, words_hash, sketch FROM documents WHERE id IN ({marks})",
            tuple(ids),
        ).fetchall()
        return [(int(r[0]), r[1], r[2], r[3], float(r[4]), int(r[5]), r[6], r[7]) for r in rows]

    def ids_since(self, since: float) -> set[int]:
        """The documents first seen or changed after `since`."""
        return {int(r[0]) for r in self._db.execute(f"SELECT id FROM documents d WHERE {SINCE}", (since, since))}

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM documents").fetchone()[0])

    def count_by_kind(self) -> dict[str, int]:
        return dict(self._db.execute("SELECT kind, count(*) FROM documents GROUP BY kind").fetchall())

    def newest_first(self) -> list[tuple[str, str, str, float]]:
        """(path, title, kind, mtime) of every document, the last changed first."""
        return self._db.execute("SELECT path, title, kind, mtime FROM documents ORDER BY mtime DESC, path").fetchall()

    def news(self, since: float) -> list[tuple[str, str, str, float, int, float | None]]:
        """(path, title, kind, first_seen, before, changed) of the documents first seen (and not there
        before) or changed after `since`."""
        return self._db.execute(
            "SELECT path, title, kind, first_seen, before, changed FROM documents"
            " WHERE (before = 0 AND first_seen > ?) OR changed > ?",
            (since, since),
        ).fetchall()
