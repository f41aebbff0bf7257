"""Splitting a document into chunks: at headings, then at blank lines, up to about 1,500 characters."""

from __future__ import annotations

import re
from dataclasses import dataclass

from lnk_link_memory.limits import CHUNK_CHARS

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")


@dataclass(frozen=True)
class Chunk:
    line: int
    """The line it starts on, from 1."""
    text: str


def _sections(lines: list[str]) -> list[tuple[int, list[str]]]:
    """Runs of lines, each starting at a heading (a # inside a code fence is no heading).

    Most lines are neither: a heading or a fence has its # or its fence within its first four
    characters, so only such lines are matched (the rest cost a slice each)."""
    sections: list[tuple[int, list[str]]] = [(0, [])]
    current = sections[0][1]
    fenced = False
    for number, line in enumerate(lines):
        head = line[:4]
        if ("`" in head or "~" in head) and _FENCE.match(line):
            fenced = not fenced
        if "#" in head and not fenced and current and _HEADING.match(line):
            current = []
            sections.append((number, current))
        current.append(line)
    return sections


def _paragraphs(start: int, lines: list[str]) -> list[tuple[int, list[str]]]:
    """Runs of lines that aren't blank, with the line each starts on."""
    paragraphs: list[tuple[int, list[str]]] = []
    current: list[str] | None = None
    for offset, line in enumerate(lines):
        if not line or line.isspace():
            current = None
        elif current is None:
            current = [line]
            paragraphs.append((start + offset, current))
        else:
            current.append(line)
    return paragraphs


def _pieces(start: int, lines: list[str], limit: int) -> list[tuple[int, str]]:
    """A paragraph over the limit, by lines; a line over the limit, cut at a space near it."""
    pieces: list[tuple[int, str]] = []
    for offset, line in enumerate(lines):
        while len(line) > limit:
            cut = line.rfind(" ", limit // 2, limit)
            cut = cut if cut > 0 else limit
            pieces.append((start + offset, line[:cut]))
            line = line[cut:].lstrip()
        if line:
            pieces.append((start + offset, line))
    return pieces


def chunk(text: str, limit: int = CHUNK_CHARS) -> list[Chunk]:
    lines = text.splitlines()
    chunks: list[Chunk] = []
    for start, section in _sections(lines):
        current: list[str] = []
        current_line = 0
        size = 0
        for para_start, para in _paragraphs(start, section):
            body = "\n".join(para)
            units = [(para_start, body)] if len(body) <= limit else _pieces(para_start, para, limit)
            for unit_line, unit in units:
                lone_heading = len(current) == 1 and bool(_HEADING.match(current[0]))
                if current and size + len(unit) + 2 > limit and not lone_heading:
                    chunks.append(Chunk(current_line + 1, "\n\n".join(current)))
                    current, size = [], 0
                if not current:
                    current_line = unit_line
                current.append(unit)
                size += len(unit) + 2
        if current:
            chunks.append(Chunk(current_line + 1, "\n\n".join(current)))
    return chunks
