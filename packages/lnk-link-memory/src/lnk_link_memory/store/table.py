"""What every group of the index's tables shares: the calling thread's connection."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lnk_link_memory.store.index import Store


class Table:
    """A group of the index's tables. Its calls use the calling thread's connection, so calls made
    within one `Store.write()` or `Store.read()` block share that block's transaction."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @property
    def _db(self) -> sqlite3.Connection:
        return self._store.db()
