"""The index file's connections and transactions, and the tables' named calls hung on it.

A change counter in the file is kept by triggers, so any writer (this server's threads, another
server over the same file) moves it, and a reader holding vectors in memory knows to look again.
Each long-running thread has its own connection and calls lease one of a few (Store.lease); WAL lets
searches read while the indexer writes. Every table's calls use the calling thread's connection, so
calls made within one `write()` or `read()` block share its transaction.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from lnk_link_memory.store import schema
from lnk_link_memory.store.changes import Removed, Skipped
from lnk_link_memory.store.chunks import Chunks, Words
from lnk_link_memory.store.documents import Documents
from lnk_link_memory.store.links import Links
from lnk_link_memory.store.vectors import Vectors

_CORRUPT = ("malformed", "not a database", "file is encrypted", "database corrupt", "disk i/o error", "unable to open")


class Corrupt(Exception):
    """The index file can't be used as it is: it is set aside and built again."""


def corrupt(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.DatabaseError) and any(word in str(exc).lower() for word in _CORRUPT)


_IDLE = 2
"""Leased connections kept open for the next calls (see Store.lease); more are closed when returned."""

BATCH_SECONDS = 0.25
"""A batch of changes is committed at least this often: what it holds shows in searches by then."""


class Batch:
    """An open transaction many changes share (see Store.batch).

    The chunks' words wait in the batch and go into the full-text table just before it commits, in
    one statement: FTS5 writes out what it holds at each savepoint, and a savepoint for each
    document made every document's words a segment of their own to write and merge (as long as
    the words themselves took to index)."""

    def __init__(self, db: sqlite3.Connection, seconds: float, put_words: Callable[[list[Words]], None]) -> None:
        self.db = db
        self.seconds = seconds
        self.began = 0.0
        self.words: list[Words] = []
        """Words of chunks written in this transaction, not yet in the full-text table."""
        self._put_words = put_words

    def commit(self) -> None:
        """Commit what is done now: before a slow step, so no other writer waits on it."""
        if self.db.in_transaction:
            if self.words:
                self._put_words(self.words)
                self.words = []
            self.db.execute("COMMIT")

    def tick(self) -> None:
        """Commit what is done if it has waited long enough: a scan walking on past its last change
        holds no other writer up."""
        if self.db.in_transaction and time.monotonic() - self.began >= self.seconds:
            self.commit()


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._generation = 0
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._idle: list[sqlite3.Connection] = []
        self.documents = Documents(self)
        self.chunks = Chunks(self)
        self.vectors = Vectors(self)
        self.links = Links(self)
        self.removed = Removed(self)
        self.skipped = Skipped(self)

    def open(self) -> None:
        """Create or check the index; a file that fails the check raises Corrupt."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = self.db()
            db.execute("PRAGMA journal_mode = WAL")
            result = db.execute("PRAGMA quick_check").fetchone()
            if result is None or result[0] != "ok":
                raise Corrupt(f"the index failed its check: {result[0] if result else 'no answer'}")
            schema.create(db)
        except sqlite3.DatabaseError as exc:
            raise Corrupt(str(exc)) from exc

    def db(self) -> sqlite3.Connection:
        """This thread's connection (or the one it leased), opened again after the file was set aside."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "generation", -1) != self._generation:
            conn = self._connect()
            self._local.conn = conn
            self._local.generation = self._generation
        return conn

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA synchronous = NORMAL")
        # Each connection keeps a small page cache (the system's file cache holds the rest), so an
        # engine grows little with each agent.
        conn.execute("PRAGMA cache_size = -1024")
        with self._lock:
            self._connections.append(conn)
        return conn

    @contextmanager
    def lease(self) -> Iterator[None]:
        """Within the block, this thread's calls share one of a few connections kept for the purpose.

        Threads that answer calls now and then (an engine's workers, shared by every agent it serves)
        would otherwise each keep a connection, and its page cache, to every agent's index: an engine
        of ten agents held 140 of them. A thread with a connection of its own keeps using it."""
        if getattr(self._local, "conn", None) is not None and self._local.generation == self._generation:
            yield
            return
        with self._lock:
            self._local.conn = self._idle.pop() if self._idle else None  # else opened when first asked for
        self._local.generation = self._generation
        try:
            yield
        finally:
            conn = self._local.conn  # another, if the file was set aside during the block
            self._local.conn = None
            if conn is not None:
                self._give_back(conn, self._local.generation == self._generation)

    def _give_back(self, conn: sqlite3.Connection, current: bool) -> None:
        with self._lock:
            if current and not conn.in_transaction and len(self._idle) < _IDLE:
                self._idle.append(conn)
                return
            if conn in self._connections:
                self._connections.remove(conn)
        with contextlib.suppress(sqlite3.Error):
            conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One change, all or nothing: its own transaction, or within this thread's batch a savepoint
        of the batch's transaction (begun at its first change, committed now and then)."""
        db = self.db()
        batch: Batch | None = getattr(self._local, "batch", None)
        if not db.in_transaction:
            if batch is None:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
                return
            db.execute("BEGIN IMMEDIATE")
            batch.began = time.monotonic()
        db.execute("SAVEPOINT change")
        words = len(batch.words) if batch is not None else 0
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK TO change")
            db.execute("RELEASE change")
            if batch is not None:
                del batch.words[words:]
            raise
        db.execute("RELEASE change")
        if batch is not None:
            batch.tick()

    def words_to_index(self, words: list[Words]) -> None:
        """Chunks' words for the full-text table: at once, or within a batch when it commits."""
        batch: Batch | None = getattr(self._local, "batch", None)
        if batch is not None and self.db().in_transaction:
            batch.words.extend(words)
        else:
            self.chunks.put_words(words)

    @contextmanager
    def batch(self, seconds: float = BATCH_SECONDS) -> Iterator[Batch]:
        """This thread's changes in few transactions, each committed within about `seconds` of its first
        change (so searches see them soon, and no other writer waits long)."""
        db = self.db()
        batch = Batch(db, seconds, self.chunks.put_words)
        self._local.batch = batch
        try:
            yield batch
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            batch.words = []
            raise
        finally:
            self._local.batch = None
        batch.commit()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """One consistent view across several queries."""
        db = self.db()
        db.execute("BEGIN")
        try:
            yield db
        finally:
            db.execute("COMMIT")

    @property
    def generation(self) -> int:
        """Moves each time the file is set aside."""
        return self._generation

    def counter(self) -> int:
        return int(self.db().execute("SELECT n FROM counter").fetchone()[0])

    def meta(self, key: str) -> str | None:
        row = self.db().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.db().execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def size(self) -> int:
        return sum(p.stat().st_size for p in self._files() if p.exists())

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._connections.clear()
            self._idle.clear()
            self._generation += 1

    def set_aside(self) -> Path:
        """Move the index (and its WAL) out of the way, so a new one is built in its place."""
        self.close()
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        for path in self._files():
            if path.exists():
                os.replace(path, aside.with_name(aside.name + path.name[len(self.path.name) :]))
        return aside

    def _files(self) -> list[Path]:
        return [self.path, self.path.with_name(self.path.name + "-wal"), self.path.with_name(self.path.name + "-shm")]
