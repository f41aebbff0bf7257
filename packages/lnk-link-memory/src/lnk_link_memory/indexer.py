"""Keeping the index in step with the folder: what is new, changed, removed or left out, and why."""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import PurePosixPath

from lnk_link_memory import links, text
from lnk_link_memory.chunking import Chunk, chunk
from lnk_link_memory.extract import ExtractFailed, extract
from lnk_link_memory.folder import Folder, Found, Kind, Missing, Refused, Skipped, extracted
from lnk_link_memory.limits import MAX_TEXT_CHARS, REMOVED_KEPT
from lnk_link_memory.store import Store
from lnk_link_memory.walk import walk

log = logging.getLogger(__name__)

BASELINE = "baseline"
"""Set once memory has read the whole folder a first time: what was there then is not news."""


@dataclass(frozen=True)
class Scan:
    indexed: int
    removed: int
    seconds: float


def _hash(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()


class Indexer:
    def __init__(self, folder: Folder, store: Store) -> None:
        self.folder = folder
        self.store = store

    def scan(self) -> Scan:
        started = time.monotonic()
        db = self.store.db()
        first = self.store.meta(BASELINE) is None
        known = dict(db.execute("SELECT path, signature FROM documents").fetchall())
        skipped = {path: (reason, sig) for path, reason, sig in db.execute("SELECT * FROM skipped")}
        seen: set[str] = set()
        unread: list[str] = []
        indexed = 0
        for item in walk(self.folder):
            seen.add(item.path)
            if isinstance(item, Skipped):
                if item.unknown:
                    unread.append(item.path.rstrip("/") + "/")
                if skipped.get(item.path) != (item.reason, "") or item.path in known:
                    self._skip(item.path, item.reason, "")
            elif known.get(item.path) != item.signature and skipped.get(item.path, ("", ""))[1] != item.signature:
                indexed += self._index_one(item, first)
        # What was under a folder that couldn't be read this time may well be there still: not removed.
        gone = [path for path in known if path not in seen and not path.startswith(tuple(unread))]
        for path in gone:
            self.remove(path)
        stale = [path for path in skipped if path not in seen]
        if stale:
            with self.store.write() as w:
                w.executemany("DELETE FROM skipped WHERE path = ?", [(p,) for p in stale])
        if first:
            self.store.set_meta(BASELINE, str(time.time()))
        return Scan(indexed, len(gone), time.monotonic() - started)

    def _index_one(self, found: Found, first: bool) -> int:
        """Index one document; whatever goes wrong with it is said for it alone, and the scan goes on."""
        try:
            return self.index(found, first)
        except sqlite3.Error:
            raise  # the index itself: a corrupt one is set aside and built again
        except Exception as exc:
            log.exception("indexing %s failed", found.path)
            self._skip(found.path, f"couldn't be indexed ({type(exc).__name__}: {exc})", found.signature)
            return 0

    def refresh(self, path: str) -> None:
        """Index one document now (after remember wrote it), not at the next scan."""
        item = self.folder.find(path)
        if item is None:
            self.remove(path)
        elif isinstance(item, Skipped):
            self._skip(item.path, item.reason, "")
        else:
            self.index(item, first=False)

    def index(self, found: Found, first: bool) -> int:
        """Read and index one document; 1 when its words changed."""
        try:
            body = self._text(found)
        except Missing:
            self.remove(found.path)  # gone since the walk found it
            return 0
        except (Refused, ExtractFailed) as exc:
            self._skip(found.path, str(exc), found.signature)
            return 0
        digest = _hash(body)
        db = self.store.db()
        row = db.execute("SELECT id, hash FROM documents WHERE path = ?", (found.path,)).fetchone()
        if row is not None and row[1] == digest:
            with self.store.write() as w:
                w.execute(
                    "UPDATE documents SET signature = ?, mtime = ? WHERE id = ?", (found.signature, found.mtime, row[0])
                )
                w.execute("DELETE FROM skipped WHERE path = ?", (found.path,))
            return 0
        self._write(found, body, digest, row[0] if row else None, first)
        return 1

    def _text(self, found: Found) -> str:
        handle, _ = self.folder.open(found.path)
        try:
            if extracted(found.path):
                body = extract(handle, PurePosixPath(found.path).suffix)
            else:
                with os.fdopen(handle, "rb", closefd=False) as stream:
                    body = stream.read(MAX_TEXT_CHARS * 4 + 1).decode("utf-8", errors="replace")
        finally:
            os.close(handle)
        if len(body) > MAX_TEXT_CHARS:
            raise ExtractFailed(f"its text runs past {MAX_TEXT_CHARS // 2**20} MiB: left out, not half read")
        return body.replace("\x00", "")

    def _write(self, found: Found, body: str, digest: str, doc: int | None, first: bool) -> None:
        source, parts = self.folder.locate(found.path)
        if found.kind is Kind.CONVERSATION:
            title = text.heading_title(body) or text.clip(f"Conversation {parts[0]}")
            name_title = None
        else:
            title = text.heading_title(body) or text.name_title(found.path)
            name_title = text.name_title(found.path)
        words = text.tokens(body)
        bag, sketch = text.fingerprint(words)
        pieces = chunk(body)
        stem = links.without_suffix("/".join(parts)).lower()
        found_links = links.found_in(body, found.path, source.prefix)
        now = time.time()
        values: dict[str, object] = {
            "kind": found.kind.value,
            "title": title,
            "signature": found.signature,
            "hash": digest,
            "mtime": found.mtime,
            "words": len(words),
            "words_hash": _hash(" ".join(words)),
            "bag": bag,
            "sketch": sketch,
            "text": body if extracted(found.path) else None,
        }
        with self.store.write() as w:
            if doc is None:
                w.execute("DELETE FROM removed WHERE path = ?", (found.path,))
                name = PurePosixPath(stem).name
                values.update(path=found.path, name=name, stem=stem, first_seen=now, before=int(first), changed=None)
                columns, marks = ", ".join(values), ", ".join("?" * len(values))
                insert = w.execute(f"INSERT INTO documents({columns}) VALUES ({marks})", tuple(values.values()))
                doc = int(insert.lastrowid or 0)
            else:
                values["changed"] = now
                assignments = ", ".join(f"{column} = ?" for column in values)
                w.execute(f"UPDATE documents SET {assignments} WHERE id = ?", (*values.values(), doc))
            self._chunks(w, doc, title, name_title, pieces)
            w.execute("DELETE FROM links WHERE doc = ?", (doc,))
            w.executemany(
                "INSERT INTO links(doc, ord, kind, target, key) VALUES (?,?,?,?,?)",
                [(doc, i, link.kind, link.target, link.key) for i, link in enumerate(found_links)],
            )
            w.execute("DELETE FROM skipped WHERE path = ?", (found.path,))

    def _chunks(self, w: sqlite3.Connection, doc: int, title: str, name_title: str | None, pieces: list[Chunk]) -> None:
        """Replace a document's chunks, keeping (and so not embedding again) each one whose words are the same."""
        old: dict[str, int] = {}
        for chunk_id, chunk_hash in w.execute("SELECT id, hash FROM chunks WHERE doc = ?", (doc,)):
            old.setdefault(chunk_hash, chunk_id)
        wanted: list[tuple[int, str, str, bool]] = []
        if name_title:
            wanted.append((0, name_title, _hash("title\n" + name_title), True))
        wanted.extend((piece.line, piece.text, _hash(title + "\n\n" + piece.text), False) for piece in pieces)
        kept: set[int] = set()
        for order, (line, body, chunk_hash, is_title) in enumerate(wanted):
            reuse = old.pop(chunk_hash, None)
            if reuse is not None:
                kept.add(reuse)
                w.execute("UPDATE chunks SET ord = ?, line = ? WHERE id = ?", (order, line, reuse))
                w.execute("DELETE FROM fts WHERE rowid = ?", (reuse,))
                chunk_id = reuse
            else:
                chunk_id = int(
                    w.execute(
                        "INSERT INTO chunks(doc, ord, line, text, hash, title) VALUES (?,?,?,?,?,?)",
                        (doc, order, line, body, chunk_hash, int(is_title)),
                    ).lastrowid
                    or 0
                )
            w.execute(
                "INSERT INTO fts(rowid, title, body) VALUES (?, ?, ?)",
                (chunk_id, text.for_index(title), "" if is_title else text.for_index(body)),
            )
        w.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in old.values()])

    def remove(self, path: str) -> None:
        with self.store.write() as w:
            row = w.execute("SELECT title, kind FROM documents WHERE path = ?", (path,)).fetchone()
            if row is None:
                return
            w.execute("DELETE FROM documents WHERE path = ?", (path,))
            w.execute("INSERT OR REPLACE INTO removed VALUES (?, ?, ?, ?)", (path, row[0], row[1], time.time()))
            w.execute(
                "DELETE FROM removed WHERE path IN (SELECT path FROM removed ORDER BY at DESC LIMIT -1 OFFSET ?)",
                (REMOVED_KEPT,),
            )

    def _skip(self, path: str, reason: str, signature: str) -> None:
        with self.store.write() as w:
            row = w.execute("SELECT title, kind FROM documents WHERE path = ?", (path,)).fetchone()
            if row is not None:
                w.execute("DELETE FROM documents WHERE path = ?", (path,))
            w.execute("INSERT OR REPLACE INTO skipped VALUES (?, ?, ?)", (path, reason, signature))
