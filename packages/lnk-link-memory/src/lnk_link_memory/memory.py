"""One agent's (or one folder's) memory: the index kept in step, and the five tools' answers."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from lnk_link_memory import links, search, text
from lnk_link_memory.answers import (
    Entry,
    Hit,
    LinkEntry,
    LinksAnswer,
    ListAnswer,
    ReadAnswer,
    Remembered,
    SearchAnswer,
    SkippedFile,
    State,
    Status,
    budget,
    chars,
    clip_json,
    json_chars,
    when,
)
from lnk_link_memory.embedding import Embedding
from lnk_link_memory.folder import Folder, Kind, Refused, extracted
from lnk_link_memory.indexer import BASELINE, Indexer
from lnk_link_memory.limits import SCAN_SECONDS, SEARCH_PAGE
from lnk_link_memory.models import Choice, ModelError, embedder
from lnk_link_memory.notes import Notes, NotesError
from lnk_link_memory.store import Corrupt, Store, corrupt
from lnk_link_memory.vectors import VectorCache

INDEX = "index.db"
log = logging.getLogger(__name__)
T = TypeVar("T")


class AskError(Exception):
    """A call memory can't answer as asked: what was wrong and what to do."""


@dataclass(frozen=True)
class Config:
    folder: Folder
    state: Path
    notes: Path | None
    notes_limit: int
    choice: Choice
    label: str


def parse_since(since: str | None) -> float | None:
    if since is None or not since.strip():
        return None
    value = since.strip()
    try:
        moment = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
    except ValueError:
        raise AskError(
            f"since {since!r} is not an ISO date or datetime: give e.g. 2025-03-01 or 2025-03-01T14:30."
        ) from None
    return (moment if moment.tzinfo else moment.astimezone()).timestamp()


def _offset(next_: str | None) -> int:
    if next_ is None or next_ == "":
        return 0
    if not next_.isdigit():
        raise AskError(f"next {next_!r} is not one memory gave: give back the `next` of the answer before.")
    return int(next_)


def _size(size: int | None) -> int | None:
    if size is not None and size < 1:
        raise AskError(f"size {size} is too small: give a number of tokens (about 4 characters each), or none.")
    return size


class Memory:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.folder = config.folder
        self.store = Store(config.state / INDEX)
        self.indexer = Indexer(self.folder, self.store)
        self.notes = Notes(config.notes, config.notes_limit) if config.notes is not None else None
        self.cache = VectorCache(self.store, config.choice.name)
        self._scan_lock = threading.Lock()
        self._recover_lock = threading.Lock()
        self._corrupt = threading.Event()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._last_scan: float | None = None
        self._counted: tuple[int, tuple[int, int]] = (-1, (0, 0))
        self._error: str | None = None
        self._rebuilt = False
        self._scanner = threading.Thread(target=self._scan_loop, name="scan", daemon=True)
        self._embedding: Embedding | None = None
        self._words = ThreadPoolExecutor(max_workers=1, thread_name_prefix="words")

    @property
    def writable(self) -> bool:
        return self.notes is not None

    def start(self) -> Memory:
        with self.store.lease():
            try:
                self.store.open()
            except Corrupt as exc:
                self._set_aside(str(exc))
            self.store.set_meta("model", self.config.choice.name)
        if not self.config.choice.words_only:
            self._embedding = Embedding(self.store, self.config.choice, self._corrupt)
            self._embedding.start()
        self._scanner.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._embedding is not None:
            self._embedding.stop.set()
            self._embedding.wake.set()
            self._embedding.join(timeout=30)
        if self._scanner.is_alive():
            self._scanner.join(timeout=30)
        self._words.shutdown()
        self.store.close()

    # Keeping the index in step

    def scan(self) -> None:
        with self._scan_lock:
            result = self._guard(self.indexer.scan)
            self._last_scan = time.time()
        if result.indexed and self._embedding is not None:
            self._embedding.wake.set()

    def _scan_loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.scan()
                self._error = None
            except Exception as exc:
                log.exception("scanning %s failed", self.config.label)
                self._error = f"{type(exc).__name__}: {exc}"
            if self._corrupt.is_set():
                self._set_aside("the embedding thread found the index corrupt")
                continue
            pause = max(SCAN_SECONDS, 10 * (time.monotonic() - started))
            self._wake.wait(pause)
            self._wake.clear()

    def settle(self, timeout: float = 120.0) -> None:
        """Index the folder now and wait until every chunk is embedded (tests, benchmarks, status)."""
        self.scan()
        deadline = time.monotonic() + timeout
        while self._embedding is not None and time.monotonic() < deadline:
            done, total = self._progress()
            if done >= total:
                return
            self._embedding.wake.set()
            time.sleep(0.05)

    def _guard(self, call: Callable[[], T]) -> T:
        """Run a call on the index; a corrupt index is set aside, built again, and the call made once more."""
        with self.store.lease():
            generation = self.store.generation
            try:
                return call()
            except sqlite3.Error as exc:
                if not corrupt(exc) and "closed" not in str(exc):
                    raise
                if corrupt(exc):
                    self._set_aside(str(exc), generation)
                return call()

    def _set_aside(self, why: str, generation: int | None = None) -> None:
        with self._recover_lock:
            if generation is not None and generation != self.store.generation:
                return  # another thread set it aside already
            aside = self.store.set_aside()
            log.warning("index of %s set aside as %s (%s); building it again", self.config.label, aside, why)
            self.store.open()
            self.store.set_meta("model", self.config.choice.name)
            self.cache.forget()
            self._rebuilt = True
            self._counted = (-1, (0, 0))
            self._corrupt.clear()
            self._wake.set()

    # The tools

    def search(
        self, query: str, since: str | None = None, size: int | None = None, next: str | None = None
    ) -> SearchAnswer:
        if not query.strip():
            raise AskError("The query is empty: give words to search for.")
        moment, offset, room = parse_since(since), _offset(next), budget(_size(size))
        return self._guard(lambda: self._search(query, moment, offset, room))

    def _search(self, query: str, since: float | None, offset: int, room: int) -> SearchAnswer:
        # Words are looked up while the query is embedded and compared: each waits on its own work.
        by_words = self._words.submit(lambda: search.by_words(self.store, query, since))
        meaning: list[search.Ranked] = []
        embedded: frozenset[int] = frozenset()
        note = None
        if not self.config.choice.words_only:
            try:
                vector = embedder(self.config.choice).embed([query])[0]
                chunks, docs, matrix = self.cache.current()
                embedded = self.cache.embedded()
                allowed = None if since is None else self.store.documents.ids_since(since)
                meaning = search.by_meaning(chunks, docs, matrix, vector, allowed)
            except ModelError as exc:
                note = f"searched by words only: {exc}"
        else:
            note = "searched by words only (embeddings: none)"
        groups = search.rank(self.store, by_words.result(), meaning, embedded)
        done, total = self._progress()
        answer = SearchAnswer(
            results=[],
            next=None,
            embedded=f"{done:,} of {total:,} chunks embedded",
            incomplete=self._incomplete(),
            note=note,
        )
        page = groups[offset:]
        texts = self.store.chunks.passages([g.chunk for g in page[:SEARCH_PAGE]])
        for found in page[:SEARCH_PAGE]:
            line, passage = texts.get(found.chunk, (1, ""))
            hit = Hit(
                path=found.doc.path,
                title=found.doc.title,
                kind=found.doc.kind,
                matched="both" if found.words and found.meaning else "words" if found.words else "meaning",
                line=line,
                text=passage,
                changed=when(found.doc.mtime),
                copies=sorted((d.path for d in found.copies), key=lambda p: (len(p), p)),
            )
            answer.results.append(hit)
            if len(answer.results) > 1 and chars(answer) > room:
                answer.results.pop()
                break
        shown = offset + len(answer.results)
        answer.next = str(shown) if shown < len(groups) else None
        return answer

    def _incomplete(self) -> str | None:
        """What an answer says while the index doesn't hold the whole folder yet, or None once it does."""
        if self.store.meta(BASELINE) is not None:
            return None
        read = self.store.documents.count()
        why = "its index is being built again" if self._rebuilt else "it is reading the folder for the first time"
        return f"the index is incomplete: {read:,} document{'' if read == 1 else 's'} read so far ({why})"

    def _progress(self) -> tuple[int, int]:
        """(embedded, chunks), counted again only when the index's change counter moved."""
        counter = self.store.counter()
        if self._counted[0] == counter:
            return self._counted[1]
        total = self.store.chunks.count()
        if self.config.choice.words_only:
            return 0, total
        done = self.store.vectors.count(self.config.choice.name)
        self._counted = (counter, (done, total))
        return done, total

    def read(self, path: str, start: int | None = None, size: int | None = None) -> ReadAnswer:
        first = 1 if start is None else start
        if first < 1:
            raise AskError(f"from {first}: lines are counted from 1.")
        budget_chars = budget(_size(size))
        body, title = self._guard(lambda: self._body(path))
        lines = body.splitlines() or [""]
        if first > len(lines):
            raise AskError(f"{path} has {len(lines)} lines: give `from` between 1 and {len(lines)}.")
        # What the answer holds besides its text, at its largest: the text gets the rest of the size.
        envelope = ReadAnswer(
            path=path, title=title, start=first, end=len(lines), lines=len(lines), text="", next=len(lines), cut=True
        )
        room = budget_chars - chars(envelope)
        taken: list[str] = []
        used = 0
        cut = False
        for line in lines[first - 1 :]:
            width = json_chars(line)
            if taken and used + width + 2 > room:  # each line after the first adds "\n" (2 characters in JSON)
                break
            if not taken and width > budget_chars:
                # Longer than the size itself: cut, to what the answer has room for, or when the size is
                # too small to hold even the answer around it, to the size.
                line, cut = clip_json(line, room if room >= budget_chars // 2 else budget_chars), True
                width = json_chars(line)
            used += width + (2 if taken else 0)
            taken.append(line)
            if cut:
                break  # a cut line comes alone: the next read starts at the line after it
        end = first + len(taken) - 1
        return ReadAnswer(
            path=path,
            title=title,
            start=first,
            end=end,
            lines=len(lines),
            text="\n".join(taken),
            next=end + 1 if end < len(lines) else None,
            cut=cut,
        )

    def _body(self, path: str) -> tuple[str, str]:
        try:
            self.folder.locate(path)
        except Refused as exc:
            raise AskError(str(exc)) from None
        row = self.store.documents.title_and_text(path)
        if extracted(path):
            if row is None or row[1] is None:
                skipped = self.store.skipped.reason(path)
                why = f"left out: {skipped}" if skipped else "not indexed yet: try again in a moment"
                raise AskError(f"{path} has no text memory can give ({why}).")
            return str(row[1]), str(row[0])
        try:
            data, _ = self.folder.read(path)
        except Refused as exc:
            raise AskError(str(exc)) from None
        return data.decode("utf-8", errors="replace"), str(row[0]) if row else text.name_title(path)

    def changes(self, since: str | None = None, size: int | None = None, next: str | None = None) -> ListAnswer:
        moment, offset, room = parse_since(since), _offset(next), budget(_size(size))
        entries, incomplete = self._guard(lambda: (self._entries(moment), self._incomplete()))
        answer = ListAnswer(entries=[], total=len(entries), incomplete=incomplete)
        for entry in entries[offset:]:
            answer.entries.append(entry)
            if chars(answer) > room:
                answer.entries.pop()
                break
        shown = offset + len(answer.entries)
        answer.next = str(shown) if shown < len(entries) else None
        return answer

    def _entries(self, since: float | None) -> list[Entry]:
        if since is None:
            rows = self.store.documents.newest_first()
            return [Entry(path=p, title=t, kind=k, when=when(m)) for p, t, k, m in rows]
        entries: list[tuple[float, Entry]] = []
        for path, title, kind, first_seen, before, changed in self.store.documents.news(since):
            new = not before and first_seen > since
            moment = first_seen if new or changed is None else changed
            state: State = "new" if new else "changed"
            entries.append((moment, Entry(path=path, title=title, kind=kind, state=state, when=when(moment))))
        for path, title, kind, at in self.store.removed.since(since):
            entries.append((at, Entry(path=path, title=title, kind=kind, state="removed", when=when(at))))
        entries.sort(key=lambda pair: (-pair[0], pair[1].path))
        return [entry for _, entry in entries]

    def links(self, path: str, size: int | None = None) -> LinksAnswer:
        room = budget(_size(size))
        return self._guard(lambda: self._links(path, room))

    def _links(self, path: str, room: int) -> LinksAnswer:
        documents = self.store.documents
        row = documents.id_and_stem(path)
        if row is None:
            incomplete = self._incomplete()
            if incomplete is not None:
                raise AskError(f"{path} is not a document memory holds yet: {incomplete}. Try again in a moment.")
            raise AskError(f"{path} is not a document memory holds: search or list give the paths there are.")
        doc, stem = row
        out: list[LinkEntry] = []
        for kind, target, key in self.store.links.of(doc):
            resolved = links.resolve(documents, kind, key)
            title = None if resolved is None else documents.title(resolved)
            out.append(LinkEntry(path=resolved, title=title, target=target, kind=kind))
        incoming: list[LinkEntry] = []
        seen: set[tuple[str, str]] = set()
        for source_path, source_title, kind, key in self.store.links.naming(links.keys_naming(path, stem), doc):
            if (source_path, kind) not in seen and links.resolve(documents, kind, key) == path:
                seen.add((source_path, kind))
                incoming.append(LinkEntry(path=source_path, title=source_title, target=None, kind=kind))
        answer = LinksAnswer(path=path, links_to=[], linked_from=[], left_out=0, incomplete=self._incomplete())
        for entry, into in [(e, answer.links_to) for e in out] + [(e, answer.linked_from) for e in incoming]:
            into.append(entry)
            if chars(answer) > room:
                into.pop()
                answer.left_out += 1
        return answer

    def remember(
        self, add: str | None = None, change: str | None = None, to: str | None = None, forget: str | None = None
    ) -> Remembered:
        if self.notes is None:
            raise AskError("This memory keeps no notes: Link named no notes file it may write.")
        asked = [name for name, value in (("add", add), ("change", change), ("forget", forget)) if value is not None]
        if len(asked) != 1:
            raise AskError("Give one of: add (a new line), change with to (replace a line), or forget (remove a line).")
        if (change is None) != (to is None):
            raise AskError("change and to go together: change names the line, to gives its new text.")
        try:
            if add is not None:
                written = self.notes.add(add)
            elif change is not None and to is not None:
                written = self.notes.change(change, to)
            else:
                written = self.notes.forget(forget or "")
        except NotesError as exc:
            raise AskError(str(exc)) from None
        if self.folder.notes is not None:
            with self._scan_lock:
                self._guard(lambda: self.indexer.refresh(self.folder.notes or ""))
            if self._embedding is not None:
                self._embedding.wake.set()
        return Remembered(
            done=written.done,
            line=written.line,
            notes=self.folder.notes or str(self.notes.path),
            bytes=written.size,
            room=written.room,
        )

    def status(self) -> Status:
        return self._guard(self._status)

    def _status(self) -> Status:
        counts = self.store.documents.count_by_kind()
        done, total = self._progress()
        choice = self.config.choice
        embedding = "words only (embeddings: none)" if choice.words_only else f"{done:,} of {total:,} chunks embedded"
        error = self._error or (self._embedding.error if self._embedding is not None else None)
        return Status(
            folder=self.config.label,
            documents=sum(counts.values()),
            conversations=int(counts.get(Kind.CONVERSATION.value, 0)),
            chunks=total,
            embedded=done,
            model=choice.name,
            embedding=embedding,
            skipped=[SkippedFile(path=p, why=r) for p, r in self.store.skipped.listing()],
            index_bytes=self.store.size(),
            removed_kept=self.store.removed.count(),
            notes=self.folder.notes if self.notes is not None else None,
            last_scan=when(self._last_scan) if self._last_scan else None,
            incomplete=self._incomplete(),
            error=error,
        )
