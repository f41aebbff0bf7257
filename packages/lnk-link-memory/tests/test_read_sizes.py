"""read gives whole lines, at least one, whatever size it is asked: checked over many sizes and
documents of lines of every width, including characters JSON has to escape."""

from __future__ import annotations

import json
import random

import pytest
from conftest import MakeMemory, write
from lnk_link_memory.limits import TOKEN_CHARS

from link_plugin.layout import AgentFolder

ALPHABET = 'abc xyz "quoted" back\\slash tab\t ctrl\x01 café 東京 🦭 '


def _document(rng: random.Random) -> list[str]:
    widths = [0, 1, 5, 47, 80, 200, 1_000, 5_000]
    return [
        "".join(rng.choice(ALPHABET) for _ in range(rng.choice(widths) + rng.randrange(3))).strip("\r\n\x1c\x1d\x1e")
        for _ in range(rng.randrange(1, 40))
    ]


def _width(line: str) -> int:
    return len(json.dumps(line, ensure_ascii=False)) - 2


def test_a_small_size_gives_the_whole_first_line(agent: AgentFolder, memory_of: MakeMemory) -> None:
    line = "The lease ends on the last day of next March."
    write(agent.memory / "lease.md", f"{line}\nsecond line\n")
    memory = memory_of(agent)
    for size in range(12, 80):  # a size under about 76 tokens cut this line to one character
        answer = memory.read("memory/lease.md", size=size)
        assert answer.text.splitlines()[0] == line and not answer.cut


@pytest.mark.parametrize("seed", range(12))
def test_whole_lines_at_least_one_at_every_size(agent: AgentFolder, memory_of: MakeMemory, seed: int) -> None:
    rng = random.Random(seed)
    lines = _document(rng)
    write(agent.memory / "doc.md", "\n".join(lines) + "\n")
    memory = memory_of(agent)
    sizes = sorted({*range(1, 40), *(rng.randrange(40, 3_000) for _ in range(25))})
    for size in sizes:
        room = size * TOKEN_CHARS
        at, given = 1, []
        while at is not None:
            answer = memory.read("memory/doc.md", start=at, size=size)
            text = answer.text.split("\n")
            assert answer.start == at and answer.end == at + len(text) - 1 >= at
            whole = lines[at - 1 : answer.end]
            if answer.cut:
                # Only a single line longer than the size is cut, and it comes alone.
                assert answer.end == at and _width(lines[at - 1]) > room
                assert text[0] and lines[at - 1].startswith(text[0]) and text[0] != lines[at - 1]
            else:
                assert text == whole
            if len(text) > 1:
                assert len(answer.model_dump_json()) <= room
            assert answer.next == (answer.end + 1 if answer.end < len(lines) else None)
            given.extend(whole)
            at = answer.next
        assert given == lines
