"""Search quality: sixteen questions over a fixed folder of forty documents (tests/quality/).

Each question is asked the way a person would, mostly in other words than its document's. The
numbers below are how many find their document first; they hold now, and a change that makes
search worse fails here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import MakeMemory

from link_plugin.layout import AgentFolder

FOLDER = Path(__file__).parent / "quality"

QUESTIONS: dict[str, str] = json.loads((FOLDER / "questions.json").read_text())
"""Each question, and the document it is about (the benchmarks ask them of other engines too)."""

HYBRID_FIRST = 14
WORDS_FIRST = 9


def _firsts(agent: AgentFolder, memory_of: MakeMemory, embeddings: str | None) -> list[str]:
    shutil.copytree(FOLDER, agent.memory, dirs_exist_ok=True)
    memory = memory_of(agent, embeddings=embeddings)
    memory.settle()
    missed = []
    for question, expected in QUESTIONS.items():
        results = memory.search(question).results
        if not results or results[0].path != "memory/" + expected:
            missed.append(f"{question} -> {results[0].path if results else 'nothing'}")
    return missed


def test_the_folder_is_what_the_questions_were_written_for() -> None:
    documents = sorted(p.relative_to(FOLDER).as_posix() for p in FOLDER.rglob("*.md"))
    assert len(documents) == 40
    assert set(QUESTIONS.values()) <= set(documents)


def test_words_and_meaning_find_the_document_first(agent: AgentFolder, memory_of: MakeMemory) -> None:
    missed = _firsts(agent, memory_of, embeddings=None)
    assert len(QUESTIONS) - len(missed) >= HYBRID_FIRST, missed


def test_words_alone_find_fewer(agent: AgentFolder, memory_of: MakeMemory) -> None:
    missed = _firsts(agent, memory_of, embeddings="none")
    assert len(QUESTIONS) - len(missed) >= WORDS_FIRST, missed
