"""What the tools answer: pydantic models, so every answer has one shape, sized before it is sent."""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from link_plugin.bridge.split import fitting
from lnk_link_memory.limits import ANSWER_TOKENS, TOKEN_CHARS

READ_ONLY = ("search", "read", "list", "links")
"""The tools that never change anything: none of them asks the owner first."""
REMEMBER = "remember"

Matched = Literal["words", "meaning", "both"]
State = Literal["new", "changed", "removed"]
LinkKind = Literal["markdown", "wiki"]


def when(seconds: float) -> str:
    """A time as an ISO datetime in this machine's zone, to the second."""
    return datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="seconds")


def budget(size: int | None) -> int:
    """How many characters an answer may hold: `size` tokens (about 6,000 unless asked)."""
    return max(1, size if size is not None else ANSWER_TOKENS) * TOKEN_CHARS


_CURSOR = 24
"""Room kept for the `next` an answer gains after it is filled."""


def chars(model: BaseModel) -> int:
    """How many characters the answer takes as sent, with room for its `next`."""
    return len(model.model_dump_json()) + _CURSOR


def json_chars(text: str) -> int:
    """How many characters a string takes inside an answer (its JSON escapes counted, not its quotes)."""
    return len(json.dumps(text, ensure_ascii=False)) - 2


def clip_json(text: str, room: int) -> str:
    """The longest start of a text taking at most `room` characters inside an answer (at least one)."""
    return text[: max(1, fitting(text, room, json_chars))]


def now() -> float:
    return time.time()


INCOMPLETE = (
    "set while memory is still reading the folder (a first reading, or after its index was built again):"
    " what it hasn't read yet can't be found"
)


class Answer(BaseModel):
    # Each answer's validator and schema are built when it is first used, not when this module is
    # imported: a process that only indexes (or starts before its first call) never pays for them.
    model_config = ConfigDict(defer_build=True)


class Hit(Answer):
    path: str
    title: str
    kind: str = Field(description="document, notes, or conversation")
    matched: Matched = Field(description="why it came back: its words, its meaning, or both")
    line: int = Field(description="where the passage below starts: read from here")
    text: str
    changed: str
    copies: list[str] = Field(default_factory=list, description="other paths holding the same words")


class SearchAnswer(Answer):
    results: list[Hit]
    next: str | None = Field(None, description="give it back as `next` for more")
    embedded: str = Field(description="how far embedding has got, e.g. 812 of 1,000 chunks")
    incomplete: str | None = Field(None, description=INCOMPLETE)
    note: str | None = None


class ReadAnswer(Answer):
    path: str
    title: str
    start: int = Field(description="the first line given")
    end: int = Field(description="the last line given")
    lines: int = Field(description="how many lines the document has")
    text: str
    next: int | None = Field(None, description="the line to read from next, when there is more")
    cut: bool = Field(False, description="a single line longer than the size was cut")


class Entry(Answer):
    path: str
    title: str
    kind: str
    state: State | None = None
    when: str


class ListAnswer(Answer):
    entries: list[Entry]
    next: str | None = None
    total: int
    incomplete: str | None = Field(None, description=INCOMPLETE)


class LinkEntry(Answer):
    path: str | None = Field(None, description="the document it names now (none there yet: null)")
    title: str | None = None
    target: str | None = Field(None, description="the link as written")
    kind: LinkKind


class LinksAnswer(Answer):
    path: str
    links_to: list[LinkEntry]
    linked_from: list[LinkEntry]
    left_out: int = Field(0, description="entries that didn't fit the size")
    incomplete: str | None = Field(None, description=INCOMPLETE)


class Remembered(Answer):
    done: str
    line: str | None = None
    notes: str
    bytes: int
    room: int = Field(description="bytes left before the notes limit")


class SkippedFile(Answer):
    path: str
    why: str


class Status(Answer):
    folder: str
    documents: int
    conversations: int
    chunks: int
    embedded: int
    model: str
    embedding: str
    skipped: list[SkippedFile]
    index_bytes: int
    removed_kept: int
    notes: str | None
    last_scan: str | None = None
    incomplete: str | None = Field(None, description=INCOMPLETE)
    error: str | None = None
