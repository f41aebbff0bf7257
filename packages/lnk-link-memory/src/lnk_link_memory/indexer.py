"""Keeping the index in step with the folder: what is new, changed, removed or left out, and why."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from lnk_link_memory import links, text
from lnk_link_memory.embedding import WORDS_FIRST
from lnk_link_memory.extract import ExtractFailed, extract
from lnk_link_memory.folder import Folder, Found, Kind, Missing, Refused, Skipped, extracted
from lnk_link_memory.limits import MAX_TEXT_CHARS, REMOVED_KEPT
from lnk_link_memory.prepare import Document, Prepared, digest, prepare_all
from lnk_link_memory.store import Batch, Store
from lnk_link_memory.store.chunks import Added, Moved, Words
from lnk_link_memory.walk import walk

log = logging.getLogger(__name__)

BASELINE = "baseline"
"""Set once memory has read the whole folder a first time: what was there then is not news."""
SKETCHES = "sketches"
"""How the documents' sketches were made (text.SKETCH_VERSION)."""
BAGS = "bags"
"""How the documents' words were hashed into their bags (text.BAG_VERSION)."""
GROUP_DOCUMENTS = 32
GROUP_BYTES = 2**20
"""A group of documents prepared together holds at most this many, or about this many bytes."""


@dataclass(frozen=True)
class Scan:
    indexed: int
    removed: int
    seconds: float


@dataclass(frozen=True)
class Read:
    """A document read to be indexed: its text, the text's hash, and its id when it was indexed before."""

    document: Document
    body_hash: str
    doc: int | None


class Indexer:
    def __init__(self, folder: Folder, store: Store) -> None:
        self.folder = folder
        self.store = store
        self._batch: Batch | None = None
        self._words_first: contextlib.ExitStack | None = None
        """Held from a scan's first document to index to its end: embedding waits meanwhile."""
        self._indexing = False
        self._group_began = 0.0

    def scan(self) -> Scan:
        started = time.monotonic()
        self._bags()
        self._sketches()
        first = self.store.meta(BASELINE) is None
        known = self.store.documents.signatures()
        skipped = self.store.skipped.all()
        seen: set[str] = set()
        unread: list[str] = []
        indexed = 0
        # Changes share a transaction committed every quarter second or so: one per document cost
        # as much as the document's words did. Documents to index are read and prepared a group at
        # a time (see _index_group), and a group waits no longer than a batch does.
        group: list[Found] = []
        try:
            with self.store.batch() as self._batch, contextlib.ExitStack() as self._words_first:
                for item in walk(self.folder):
                    if group and time.monotonic() - self._group_began >= self._batch.seconds:
                        indexed += self._index_group(group, first)
                        self._batch.commit()
                    self._batch.tick()
                    seen.add(item.path)
                    if isinstance(item, Skipped):
                        if item.unknown:
                            unread.append(item.path.rstrip("/") + "/")
                        if skipped.get(item.path) != (item.reason, "") or item.path in known:
                            self._skip(item.path, item.reason, "")
                    elif known.get(item.path) != item.signature != skipped.get(item.path, ("", ""))[1]:
                        if not group:
                            self._group_began = time.monotonic()
                        group.append(item)
                        if len(group) >= GROUP_DOCUMENTS or sum(f.size for f in group) >= GROUP_BYTES:
                            indexed += self._index_group(group, first)
                indexed += self._index_group(group, first)
                # What was under a folder that couldn't be read this time may well be there still: not removed.
                gone = [path for path in known if path not in seen and not path.startswith(tuple(unread))]
                for path in gone:
                    self.remove(path)
                stale = [path for path in skipped if path not in seen]
                if stale:
                    with self.store.write():
                        self.store.skipped.forget(stale)
        finally:
            self._batch = self._words_first = None
            self._indexing = False
        if first:
            self.store.set_meta(BASELINE, str(time.time()))
        return Scan(indexed, len(gone), time.monotonic() - started)

    def _sketches(self) -> None:
        """Sketches made another way than this release's are made again from each document's bag."""
        if self.store.meta(SKETCHES) == text.SKETCH_VERSION:
            return
        with self.store.write():
            self.store.documents.set_sketches([(text.sketch(b), i) for i, b in self.store.documents.bags()])
            self.store.set_meta(SKETCHES, text.SKETCH_VERSION)

    def _bags(self) -> None:
        """Bags made another way than this release's are made again from each document's words as
        indexed (its chunks), so copies are told alike across documents old and new."""
        if self.store.meta(BAGS) == text.BAG_VERSION:
            return
        with self.store.write():
            made = ((text.fingerprint(words), doc) for doc, words in self.store.documents.words())
            self.store.documents.set_fingerprints((f.words, f.words_hash, f.bag, f.sketch, doc) for f, doc in made)
            self.store.set_meta(BAGS, text.BAG_VERSION)

    def refresh(self, path: str) -> None:
        """Index one document now (after remember wrote it), not at the next scan."""
        item = self.folder.find(path)
        if item is None:
            self.remove(path)
        elif isinstance(item, Skipped):
            self._skip(item.path, item.reason, "")
        else:
            self.index(item, first=False)

    def _index_group(self, group: list[Found], first: bool) -> int:
        """Index a group of documents (emptying it); how many of them changed their words.

        Read one by one, prepared together (their fingerprints are worked out in one go, see
        text.fingerprints), written one by one, each in a change of its own: whatever goes wrong
        with one document is said for it alone, and the rest are indexed."""
        read: list[tuple[Found, Read]] = []
        for found in group:
            with self._own_failure(found):
                got = self._read(found)
                if got is not None:
                    read.append((found, got))
        group.clear()
        try:
            prepared = prepare_all([got.document for _, got in read])
        except Exception:
            prepared = []  # prepared again one by one below, so the failure is said for its document
        indexed = 0
        for i, (found, got) in enumerate(read):
            with self._own_failure(found):
                ready = prepared[i] if prepared else prepare_all([got.document])[0]
                self._write(found, got, first, ready)
                indexed += 1
        return indexed

    @contextlib.contextmanager
    def _own_failure(self, found: Found) -> Iterator[None]:
        """Whatever goes wrong with one document is said for it alone, and the scan goes on."""
        try:
            yield
        except sqlite3.Error:
            raise  # the index itself: a corrupt one is set aside and built again
        except Exception as exc:
            log.exception("indexing %s failed", found.path)
            self._skip(found.path, f"couldn't be indexed ({type(exc).__name__}: {exc})", found.signature)

    def index(self, found: Found, first: bool) -> int:
        """Read and index one document; 1 when its words changed."""
        got = self._read(found)
        if got is None:
            return 0
        self._write(found, got, first, prepare_all([got.document])[0])
        return 1

    def _read(self, found: Found) -> Read | None:
        """A document's text to index, or None when there is nothing to index: it is gone, left out
        (and said so), or its words are those indexed already (only its signature is noted)."""
        try:
            body = self._text(found)
        except Missing:
            self.remove(found.path)  # gone since the walk found it
            return None
        except (Refused, ExtractFailed) as exc:
            self._skip(found.path, str(exc), found.signature)
            return None
        body_hash = digest(body)
        row = self.store.documents.id_and_hash(found.path)
        if row is not None and row[1] == body_hash:
            with self.store.write():
                self.store.documents.touch(row[0], found.signature, found.mtime)
                self.store.skipped.forget([found.path])
            return None
        source, parts = self.folder.locate(found.path)
        conversation = parts[0] if found.kind is Kind.CONVERSATION else None
        document = Document(found.path, conversation, source.prefix, body)
        return Read(document, body_hash, row[0] if row else None)

    def _text(self, found: Found) -> str:
        handle, _ = self.folder.open(found.path)
        try:
            if extracted(found.path):
                if self._batch is not None:
                    self._batch.commit()  # nothing waits on the extraction, which may take seconds
                body = extract(handle, PurePosixPath(found.path).suffix)
            else:
                # What the file holds (asking for the most a document may hold made every read find
                # room for 8 MiB), and on up to that most if it grew since.
                size, most = os.fstat(handle).st_size, MAX_TEXT_CHARS * 4 + 1
                with os.fdopen(handle, "rb", closefd=False) as stream:
                    data = stream.read(min(size + 1, most))
                    if len(data) > size:
                        data += stream.read(most - len(data))
                body = data.decode("utf-8", errors="replace")
        finally:
            os.close(handle)
        if len(body) > MAX_TEXT_CHARS:
            raise ExtractFailed(f"its text runs past {MAX_TEXT_CHARS // 2**20} MiB: left out, not half read")
        return body.replace("\x00", "")

    def _write(self, found: Found, got: Read, first: bool, prepared: Prepared) -> None:
        if self._words_first is not None and not self._indexing:
            self._words_first.enter_context(WORDS_FIRST.indexing())
            self._indexing = True
        body, body_hash, doc = got.document.body, got.body_hash, got.doc
        stem = links.without_suffix(found.path[len(got.document.prefix) :]).lower()
        now = time.time()
        values: dict[str, object] = {
            "kind": found.kind.value,
            "title": prepared.title,
            "signature": found.signature,
            "hash": body_hash,
            "mtime": found.mtime,
            "words": prepared.words,
            "words_hash": prepared.words_hash,
            "bag": prepared.bag,
            "sketch": prepared.sketch,
            "text": body if extracted(found.path) else None,
        }
        with self.store.write():
            if doc is None:
                self.store.removed.forget(found.path)
                name = stem.rsplit("/", 1)[-1]
                values.update(path=found.path, name=name, stem=stem, first_seen=now, before=int(first), changed=None)
                doc = self.store.documents.add(values)
            else:
                values["changed"] = now
                self.store.documents.update(doc, values)
            self._chunks(doc, prepared.title, prepared.name_title, prepared.pieces)
            self.store.links.replace(doc, [(link.kind, link.target, link.key) for link in prepared.links])
            self.store.skipped.forget([found.path])

    def _chunks(self, doc: int, title: str, name_title: str | None, pieces: list[tuple[int, str]]) -> None:
        """Replace a document's chunks, keeping (and so not embedding again) each one whose words are the same."""
        old: dict[str, int] = {}
        for kept, chunk_hash in self.store.chunks.of(doc):
            old.setdefault(chunk_hash, kept)
        wanted: list[tuple[int, str, str, bool]] = []
        if name_title:
            wanted.append((0, name_title, digest("title\n" + name_title), True))
        wanted.extend((line, piece, digest(title + "\n\n" + piece), False) for line, piece in pieces)
        # New chunks are numbered here, so all of them go in at once: the write lock is held.
        next_id = self.store.chunks.next_id()
        moved: list[Moved] = []
        added: list[Added] = []
        words: list[Words] = []
        indexed_title = text.for_index(title)
        for order, (line, body, chunk_hash, is_title) in enumerate(wanted):
            chunk_id = old.pop(chunk_hash, None)
            if chunk_id is not None:
                moved.append((order, line, chunk_id))
            else:
                chunk_id, next_id = next_id, next_id + 1
                added.append((chunk_id, doc, order, line, body, chunk_hash, int(is_title)))
            words.append((chunk_id, indexed_title, "" if is_title else text.for_index(body)))
        self.store.chunks.replace(list(old.values()), moved, added, words)

    def remove(self, path: str) -> None:
        with self.store.write():
            gone = self.store.documents.remove(path)
            if gone is not None:
                self.store.removed.note(path, *gone, time.time(), keep=REMOVED_KEPT)

    def _skip(self, path: str, reason: str, signature: str) -> None:
        with self.store.write():
            self.store.documents.remove(path)
            self.store.skipped.add(path, reason, signature)
