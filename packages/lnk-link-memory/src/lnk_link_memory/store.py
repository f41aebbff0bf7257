"""The index: one SQLite file holding documents, chunks, their words (FTS5), vectors and links.

A change counter in the file is kept by triggers, so any writer (this server's threads, another
server over the same file) moves it, and a reader holding vectors in memory knows to look again.
Each long-running thread has its own connection and calls lease one of a few (Store.lease); WAL lets
searches read while the indexer writes.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS counter(id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
INSERT OR IGNORE INTO counter VALUES (1, 0);
CREATE TABLE IF NOT EXISTS documents(
  id INTEGER PRIMARY KEY,
  path TEXT UNIQUE NOT NULL,
  name TEXT NOT NULL,            -- the file's name without suffix, lowercased: wiki links find it by this
  stem TEXT NOT NULL,            -- its path under its source without suffix, lowercased
  kind TEXT NOT NULL,
  title TEXT NOT NULL,
  signature TEXT NOT NULL,
  hash TEXT NOT NULL,
  mtime REAL NOT NULL,
  first_seen REAL NOT NULL,
  before INTEGER NOT NULL,       -- there when memory first read the folder: not news
  changed REAL,                  -- when its words last changed after it was first seen
  words INTEGER NOT NULL,
  words_hash TEXT NOT NULL,
  bag BLOB NOT NULL,             -- its words and how often: copies are told by these
  sketch BLOB NOT NULL,          -- min-hashes of its words: which documents may be copies at all
  text TEXT                      -- the extracted text of a PDF or Word document
);
CREATE INDEX IF NOT EXISTS documents_name ON documents(name);
CREATE TABLE IF NOT EXISTS chunks(
  id INTEGER PRIMARY KEY,
  doc INTEGER NOT NULL,
  ord INTEGER NOT NULL,
  line INTEGER NOT NULL,
  text TEXT NOT NULL,
  hash TEXT NOT NULL,
  title INTEGER NOT NULL DEFAULT 0  -- the title from the file's name, embedded on its own
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(title, body, tokenize = 'porter unicode61 remove_diacritics 2');
-- Ranked by bm25 with the title counting four times the body.
INSERT INTO fts(fts, rank) VALUES ('rank', 'bm25(4.0, 1.0)');
CREATE TABLE IF NOT EXISTS vectors(
  chunk INTEGER PRIMARY KEY,
  model TEXT NOT NULL,
  vector BLOB NOT NULL,
  seq INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS vectors_seq ON vectors(model, seq);
CREATE TABLE IF NOT EXISTS links(
  doc INTEGER NOT NULL,
  ord INTEGER NOT NULL,
  kind TEXT NOT NULL,
  target TEXT NOT NULL,
  key TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS links_doc ON links(doc);
CREATE INDEX IF NOT EXISTS links_key ON links(key);
CREATE TABLE IF NOT EXISTS removed(path TEXT PRIMARY KEY, title TEXT NOT NULL, kind TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS removed_at ON removed(at);
CREATE TABLE IF NOT EXISTS skipped(path TEXT PRIMARY KEY, reason TEXT NOT NULL, signature TEXT NOT NULL);

CREATE TRIGGER IF NOT EXISTS chunk_added AFTER INSERT ON chunks BEGIN
  UPDATE counter SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS chunk_moved AFTER UPDATE ON chunks BEGIN
  UPDATE counter SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS chunk_rewritten AFTER UPDATE OF text, hash ON chunks BEGIN
  DELETE FROM vectors WHERE chunk = new.id;
END;
CREATE TRIGGER IF NOT EXISTS chunk_gone AFTER DELETE ON chunks BEGIN
  UPDATE counter SET n = n + 1;
  DELETE FROM vectors WHERE chunk = old.id;
  DELETE FROM fts WHERE rowid = old.id;
END;
CREATE TRIGGER IF NOT EXISTS document_gone AFTER DELETE ON documents BEGIN
  DELETE FROM chunks WHERE doc = old.id;
  DELETE FROM links WHERE doc = old.id;
END;
CREATE TRIGGER IF NOT EXISTS vector_added AFTER INSERT ON vectors BEGIN
  UPDATE counter SET n = n + 1;
  UPDATE vectors SET seq = (SELECT n FROM counter) WHERE chunk = new.chunk;
END;
CREATE TRIGGER IF NOT EXISTS vector_gone AFTER DELETE ON vectors BEGIN
  UPDATE counter SET n = n + 1;
END;
"""

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
    """An open transaction many changes share (see Store.batch)."""

    def __init__(self, db: sqlite3.Connection, seconds: float) -> None:
        self.db = db
        self.seconds = seconds
        self.began = 0.0

    def commit(self) -> None:
        """Commit what is done now: before a slow step, so no other writer waits on it."""
        if self.db.in_transaction:
            self.db.execute("COMMIT")

    def tick(self) -> None:
        """Commit what is done if it has waited long enough: a scan walking on past its last change
        holds no other writer up."""
        if self.db.in_transaction and time.monotonic() - self.began >= self.seconds:
            self.db.execute("COMMIT")


class Store:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._generation = 0
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._idle: list[sqlite3.Connection] = []

    def open(self) -> None:
        """Create or check the index; a file that fails the check raises Corrupt."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = self.db()
            db.execute("PRAGMA journal_mode = WAL")
            result = db.execute("PRAGMA quick_check").fetchone()
            if result is None or result[0] != "ok":
                raise Corrupt(f"the index failed its check: {result[0] if result else 'no answer'}")
            db.executescript(_SCHEMA)
            db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
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
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK TO change")
            db.execute("RELEASE change")
            raise
        db.execute("RELEASE change")
        if batch is not None:
            batch.tick()

    @contextmanager
    def batch(self, seconds: float = BATCH_SECONDS) -> Iterator[Batch]:
        """This thread's changes in few transactions, each committed within about `seconds` of its first
        change (so searches see them soon, and no other writer waits long)."""
        db = self.db()
        batch = Batch(db, seconds)
        self._local.batch = batch
        try:
            yield batch
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
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
        self.db().execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

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
