"""What the index keeps besides the documents: those removed (the latest few thousand, so `list`
says what went) and those left out (and why, so `status` and `read` can say).

In both, a row replaces the path's old one.
"""

from __future__ import annotations

from collections.abc import Iterable

from lnk_link_memory.store.table import Table


class Removed(Table):
    def note(self, path: str, title: str, kind: str, at: float, keep: int) -> None:
        """A document was removed; only the latest `keep` are kept."""
        self._db.execute(
            "INSERT OR REPLACE INTO removed(path, title, kind, at) VALUES (?, ?, ?, ?)", (path, title, kind, at)
        )
        self._db.execute(
            "DELETE FROM removed WHERE path IN (SELECT path FROM removed ORDER BY at DESC LIMIT -1 OFFSET ?)", (keep,)
        )

    def forget(self, path: str) -> None:
        """The path holds a document again."""
        self._db.execute("DELETE FROM removed WHERE path = ?", (path,))

    def since(self, since: float) -> list[tuple[str, str, str, float]]:
        """(path, title, kind, at) of what was removed after `since`."""
        return self._db.execute("SELECT path, title, kind, at FROM removed WHERE at > ?", (since,)).fetchall()

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM removed").fetchone()[0])


class Skipped(Table):
    def add(self, path: str, reason: str, signature: str) -> None:
        """A file left out, and why; `signature` the file's when reading it again wouldn't change
        that (so it isn't tried again until it changes), else empty."""
        self._db.execute(
            "INSERT OR REPLACE INTO skipped(path, reason, signature) VALUES (?, ?, ?)", (path, reason, signature)
        )

    def forget(self, paths: Iterable[str]) -> None:
        self._db.executemany("DELETE FROM skipped WHERE path = ?", [(p,) for p in paths])

    def all(self) -> dict[str, tuple[str, str]]:
        """Each path left out: (reason, signature)."""
        return {path: (reason, sig) for path, reason, sig in self._db.execute("SELECT * FROM skipped")}

    def reason(self, path: str) -> str | None:
        row = self._db.execute("SELECT reason FROM skipped WHERE path = ?", (path,)).fetchone()
        return None if row is None else str(row[0])

    def listing(self) -> list[tuple[str, str]]:
        """(path, reason) of every file left out, by path."""
        return self._db.execute("SELECT path, reason FROM skipped ORDER BY path").fetchall()
