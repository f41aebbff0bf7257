"""The index's tables, made if missing: a new index's in SQL written out, an older one's by sqlite-utils.

A new index (no plain table yet) has its tables and their indexes made by the SQL below, in one
transaction: the very statements sqlite-utils writes for them, so an index is the same whichever
made it. An index that holds every table and index is opened as it is. Only one made by an
earlier release that lacks some of them is completed by sqlite-utils, each only where it isn't
there yet: importing it took a fifth of a second of every start. What sqlite-utils has no words
for is always written out: the full-text table (FTS5, with its tokenizer and ranking), the change
counter, which holds one row, and the triggers that keep the counter, the vectors and the words
in step with the chunks.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlite_utils import Database

SCHEMA_VERSION = "1"

_DOCUMENTS = {
    "id": int,
    "path": str,
    "name": str,  # the file's name without suffix, lowercased: wiki links find it by this
    "stem": str,  # its path under its source without suffix, lowercased
    "kind": str,
    "title": str,
    "signature": str,
    "hash": str,
    "mtime": float,
    "first_seen": float,
    "before": int,  # there when memory first read the folder: not news
    "changed": float,  # when its words last changed after it was first seen
    "words": int,
    "words_hash": str,
    "bag": bytes,  # its words and how often: copies are told by these
    "sketch": bytes,  # min-hashes of its words: which documents may be copies at all
    "text": str,  # the extracted text of a PDF or Word document
}
_CHUNKS = {
    "id": int,
    "doc": int,
    "ord": int,
    "line": int,
    "text": str,
    "hash": str,
    "title": int,  # 1 for the title from the file's name, embedded on its own
}
_VECTORS = {"chunk": int, "model": str, "vector": bytes, "seq": int}
_LINKS = {"doc": int, "ord": int, "kind": str, "target": str, "key": str}
_REMOVED = {"path": str, "title": str, "kind": str, "at": float}
_SKIPPED = {"path": str, "reason": str, "signature": str}

_TABLES = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS "meta" (
   "key" TEXT PRIMARY KEY,
   "value" TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS "documents" (
   "id" INTEGER PRIMARY KEY,
   "path" TEXT NOT NULL,
   "name" TEXT NOT NULL,
   "stem" TEXT NOT NULL,
   "kind" TEXT NOT NULL,
   "title" TEXT NOT NULL,
   "signature" TEXT NOT NULL,
   "hash" TEXT NOT NULL,
   "mtime" REAL NOT NULL,
   "first_seen" REAL NOT NULL,
   "before" INTEGER NOT NULL,
   "changed" REAL,
   "words" INTEGER NOT NULL,
   "words_hash" TEXT NOT NULL,
   "bag" BLOB NOT NULL,
   "sketch" BLOB NOT NULL,
   "text" TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS "documents_path"
    ON "documents" ("path");
CREATE INDEX IF NOT EXISTS "documents_name"
    ON "documents" ("name");
CREATE TABLE IF NOT EXISTS "chunks" (
   "id" INTEGER PRIMARY KEY,
   "doc" INTEGER NOT NULL,
   "ord" INTEGER NOT NULL,
   "line" INTEGER NOT NULL,
   "text" TEXT NOT NULL,
   "hash" TEXT NOT NULL,
   "title" INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS "chunks_doc"
    ON "chunks" ("doc");
CREATE TABLE IF NOT EXISTS "vectors" (
   "chunk" INTEGER PRIMARY KEY,
   "model" TEXT NOT NULL,
   "vector" BLOB NOT NULL,
   "seq" INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS "vectors_seq"
    ON "vectors" ("model", "seq");
CREATE TABLE IF NOT EXISTS "links" (
   "doc" INTEGER NOT NULL,
   "ord" INTEGER NOT NULL,
   "kind" TEXT NOT NULL,
   "target" TEXT NOT NULL,
   "key" TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS "links_doc"
    ON "links" ("doc");
CREATE INDEX IF NOT EXISTS "links_key"
    ON "links" ("key");
CREATE TABLE IF NOT EXISTS "removed" (
   "path" TEXT PRIMARY KEY,
   "title" TEXT NOT NULL,
   "kind" TEXT NOT NULL,
   "at" REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS "removed_at"
    ON "removed" ("at");
CREATE TABLE IF NOT EXISTS "skipped" (
   "path" TEXT PRIMARY KEY,
   "reason" TEXT NOT NULL,
   "signature" TEXT NOT NULL
);
COMMIT;
"""
"""A new index's plain tables and their indexes, as sqlite-utils makes them (see `_complete`)."""

_PLAIN = {"meta", "documents", "chunks", "vectors", "links", "removed", "skipped"}
_INDEXES = {"documents_name", "chunks_doc", "vectors_seq", "links_doc", "links_key", "removed_at"}
"""What an index holds once complete (an earlier release's documents table says its paths are
unique in its own definition, so `documents_path` isn't asked for)."""

_WRITTEN_OUT = """
CREATE TABLE IF NOT EXISTS counter(id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
INSERT OR IGNORE INTO counter VALUES (1, 0);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(title, body, tokenize = 'porter unicode61 remove_diacritics 2');
-- Ranked by bm25 with the title counting four times the body.
INSERT INTO fts(fts, rank) VALUES ('rank', 'bm25(4.0, 1.0)');

-- A document's chunks are added or moved only in the change that writes its row (its text's hash
-- with it), so that row moves the counter once for them all: a trigger on each chunk added cost
-- two fifths of adding it. An index made by an earlier release loses those triggers here.
DROP TRIGGER IF EXISTS chunk_added;
DROP TRIGGER IF EXISTS chunk_moved;
CREATE TRIGGER IF NOT EXISTS document_added AFTER INSERT ON documents BEGIN
  UPDATE counter SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS document_rewritten AFTER UPDATE OF hash ON documents BEGIN
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


def _not_null(columns: Iterable[str], *nullable: str) -> list[str]:
    """Every column but those named: a table's key among them, as each table was first written."""
    return [name for name in columns if name not in nullable]


def create(db: sqlite3.Connection) -> None:
    """Make whatever of the index is missing, and note the schema's version once."""
    there = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
    if not there & _PLAIN:
        try:
            db.executescript(_TABLES)
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    elif not there.issuperset(_PLAIN | _INDEXES):
        from sqlite_utils import Database

        # Triggers fire as they always have (sqlite-utils would turn recursive triggers on), and
        # no plugin of sqlite-utils is loaded into memory's process.
        _complete(Database(db, recursive_triggers=False, execute_plugins=False))
    db.executescript(_WRITTEN_OUT)
    db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,))


def _complete(db: Database) -> None:
    """An index made by an earlier release, given the tables and indexes it lacks."""
    db.table("meta").create({"key": str, "value": str}, pk="key", not_null={"value"}, if_not_exists=True)
    documents = db.table("documents")
    if not documents.exists():
        # A path is unique: the index that holds it so is made with the table (an earlier release's
        # table says so in its own definition).
        not_null = _not_null(_DOCUMENTS, "id", "changed", "text")
        documents.create(_DOCUMENTS, pk="id", not_null=not_null, if_not_exists=True)
        documents.create_index(["path"], index_name="documents_path", unique=True, if_not_exists=True)
    documents.create_index(["name"], index_name="documents_name", if_not_exists=True)
    chunks = db.table("chunks")
    chunks.create(_CHUNKS, pk="id", not_null=_not_null(_CHUNKS, "id"), defaults={"title": 0}, if_not_exists=True)
    chunks.create_index(["doc"], index_name="chunks_doc", if_not_exists=True)
    vectors = db.table("vectors")
    vectors.create(_VECTORS, pk="chunk", not_null=_not_null(_VECTORS, "chunk"), defaults={"seq": 0}, if_not_exists=True)
    vectors.create_index(["model", "seq"], index_name="vectors_seq", if_not_exists=True)
    links = db.table("links")
    links.create(_LINKS, not_null=_not_null(_LINKS), if_not_exists=True)
    links.create_index(["doc"], index_name="links_doc", if_not_exists=True)
    links.create_index(["key"], index_name="links_key", if_not_exists=True)
    removed = db.table("removed")
    removed.create(_REMOVED, pk="path", not_null=_not_null(_REMOVED, "path"), if_not_exists=True)
    removed.create_index(["at"], index_name="removed_at", if_not_exists=True)
    db.table("skipped").create(_SKIPPED, pk="path", not_null=_not_null(_SKIPPED, "path"), if_not_exists=True)
