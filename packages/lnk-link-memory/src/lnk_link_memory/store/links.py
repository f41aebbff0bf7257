"""The links table: each document's links as written, with the key they are matched by.

Written by hand: a document's links go in by `executemany`, which costs a tenth of sqlite-utils'
insert for the few rows a document has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lnk_link_memory.store.table import Table

if TYPE_CHECKING:
    # Only named: the answers are pydantic models, which indexing has no need to import.
    from lnk_link_memory.answers import LinkKind


class Links(Table):
    def replace(self, doc: int, links: Sequence[tuple[str, str, str]]) -> None:
        """A document's links, (kind, target, key) each, in the order written, in place of its old ones."""
        self._db.execute("DELETE FROM links WHERE doc = ?", (doc,))
        self._db.executemany(
            "INSERT INTO links(doc, ord, kind, target, key) VALUES (?,?,?,?,?)",
            [(doc, i, kind, target, key) for i, (kind, target, key) in enumerate(links)],
        )

    def of(self, doc: int) -> list[tuple[LinkKind, str, str]]:
        """(kind, target, key) of a document's links, in the order written."""
        return self._db.execute("SELECT kind, target, key FROM links WHERE doc = ? ORDER BY ord", (doc,)).fetchall()

    def naming(self, keys: Sequence[str], doc: int) -> list[tuple[str, str, LinkKind, str]]:
        """(path, title, kind, key) of the other documents' links stored under one of `keys`, by path."""
        marks = ",".join("?" * len(keys))
        return self._db.execute(
            f"SELECT d.path, d.title, l.kind, l.key FROM links l JOIN documents d ON d.id = l.doc"
            f" WHERE l.key IN ({marks}) AND l.doc != ? ORDER BY d.path, l.ord",
            (*keys, doc),
        ).fetchall()
