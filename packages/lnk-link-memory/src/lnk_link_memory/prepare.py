"""What a document is made into before it is written: its title, chunks, links and fingerprint.

Work on text alone, no file and no index: the indexer reads a document, has it prepared here,
and writes what comes back in one change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from lnk_link_memory import links, text
from lnk_link_memory.chunking import chunk


@dataclass(frozen=True)
class Prepared:
    title: str
    name_title: str | None
    """The title from the file's name, embedded as its own chunk (none for a conversation)."""
    words: int
    words_hash: str
    bag: bytes
    sketch: bytes
    pieces: list[tuple[int, str]]
    """Its chunks: the line each starts on, and its text."""
    links: list[links.Link]


def digest(data: str) -> str:
    return hashlib.sha256(data.encode()).hexdigest()


@dataclass(frozen=True)
class Document:
    """A document's text to prepare, at `path` (under the source whose paths begin with `prefix`);
    `conversation` names the conversation when it is one."""

    path: str
    conversation: str | None
    prefix: str
    body: str


def prepare_all(documents: Sequence[Document]) -> list[Prepared]:
    """Each document prepared, their fingerprints worked out together."""
    words = text.fingerprints([d.body for d in documents])
    return [_prepared(d, w) for d, w in zip(documents, words, strict=True)]


def _prepared(document: Document, words: text.Fingerprint) -> Prepared:
    path, body = document.path, document.body
    if document.conversation is not None:
        title = text.heading_title(body) or text.clip(f"Conversation {document.conversation}")
        name_title = None
    else:
        title = text.heading_title(body) or text.name_title(path)
        name_title = text.name_title(path)
    return Prepared(
        title=title,
        name_title=name_title,
        words=words.words,
        words_hash=words.words_hash,
        bag=words.bag,
        sketch=words.sketch,
        pieces=[(piece.line, piece.text) for piece in chunk(body)],
        links=links.found_in(body, path, document.prefix),
    )
