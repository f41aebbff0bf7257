"""PDF and Word documents: extracted in a limited child; crafted, broken or huge ones are left out."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import MakeMemory, write
from documents import docx, docx_bomb, pdf, pdf_bomb
from lnk_link_memory import extract as extraction
from lnk_link_memory.extract import ExtractFailed, extract

from link_plugin.layout import AgentFolder


def _put(agent: AgentFolder, name: str, data: bytes) -> None:
    (agent.memory / name).write_bytes(data)


def test_pdf_and_docx_text_is_searched_and_read(agent: AgentFolder, memory_of: MakeMemory) -> None:
    _put(agent, "lease.pdf", pdf("The tenancy of the flat ends in March"))
    _put(agent, "offer.docx", docx("The salary offer is forty thousand"))
    memory = memory_of(agent)
    memory.scan()
    assert [hit.path for hit in memory.search("tenancy").results] == ["memory/lease.pdf"]
    assert [hit.path for hit in memory.search("salary offer").results] == ["memory/offer.docx"]
    assert "forty thousand" in memory.read("memory/offer.docx").text
    assert memory.status().skipped == []


def test_crafted_and_broken_files_are_left_out_and_say_why(agent: AgentFolder, memory_of: MakeMemory) -> None:
    good = pdf("A perfectly good page about otters")
    _put(agent, "bomb.pdf", pdf_bomb())
    _put(agent, "truncated.pdf", good[: len(good) // 2])
    _put(agent, "bomb.docx", docx_bomb())
    _put(agent, "broken.docx", docx("half a document")[:100])
    _put(agent, "otters.pdf", good)
    memory = memory_of(agent)
    started = time.monotonic()
    memory.scan()
    assert time.monotonic() - started < 60
    skipped = {s.path: s.why for s in memory.status().skipped}
    assert set(skipped) == {"memory/bomb.pdf", "memory/truncated.pdf", "memory/bomb.docx", "memory/broken.docx"}
    assert "zip bomb" in skipped["memory/bomb.docx"]
    assert "left out" in skipped["memory/bomb.pdf"] or "not a readable PDF" in skipped["memory/bomb.pdf"]
    assert [hit.path for hit in memory.search("otters").results] == ["memory/otters.pdf"]
    with pytest.raises(Exception, match="left out"):
        memory.read("memory/bomb.docx")


def test_a_broken_file_is_not_tried_again_until_it_changes(agent: AgentFolder, memory_of: MakeMemory) -> None:
    _put(agent, "broken.pdf", b"%PDF-1.4 nothing else")
    memory = memory_of(agent)
    memory.scan()
    assert memory.indexer.scan().indexed == 0
    _put(agent, "broken.pdf", pdf("mended now"))
    memory.scan()
    assert [hit.path for hit in memory.search("mended").results] == ["memory/broken.pdf"]
    assert memory.status().skipped == []


def test_files_over_32_mib_and_text_past_2_mib_are_left_out(agent: AgentFolder, memory_of: MakeMemory) -> None:
    with (agent.memory / "huge.md").open("wb") as handle:
        handle.truncate(33 * 2**20)
    write(agent.memory / "long.md", "walrus " * 400_000)
    write(agent.memory / "fine.md", "walrus facts\n")
    memory = memory_of(agent)
    memory.scan()
    skipped = {s.path: s.why for s in memory.status().skipped}
    assert "32 MiB" in skipped["memory/huge.md"] and "2 MiB" in skipped["memory/long.md"]
    assert [hit.path for hit in memory.search("walrus").results] == ["memory/fine.md"]


def test_the_child_gets_no_environment_and_a_wall_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent_file = tmp_path / "x.pdf"
    agent_file.write_bytes(pdf("hello there"))
    monkeypatch.setenv("LNK_SECRET_KEY", "sk-should-never-reach-a-parser")
    seen: dict[str, object] = {}
    real_run = extraction.subprocess.run

    def spy(*args: object, **kwargs: object) -> object:
        seen.update(kwargs)
        return real_run(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(extraction.subprocess, "run", spy)
    with open(agent_file, "rb") as handle:
        assert "hello there" in extract(handle.fileno(), ".pdf")
    assert seen["env"] == {}
    monkeypatch.setattr(extraction, "EXTRACT_WALL_SECONDS", 0.001)
    with open(agent_file, "rb") as handle, pytest.raises(ExtractFailed, match="took over"):
        extract(handle.fileno(), ".pdf")
