"""remember: one line added, changed or forgotten; never past the limit, never through a link."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MakeMemory, write
from lnk_link_memory.memory import AskError
from lnk_link_memory.notes import Notes, NotesError

from link_plugin.layout import AgentFolder


def test_add_change_forget(tmp_path: Path) -> None:
    notes = Notes(tmp_path / "notes.md", 4096)
    notes.add("my sister is called Ana")
    notes.add("* dentist on Tuesdays")
    notes.change("sister", "my sister Ana lives in Porto")
    notes.forget("dentist")
    assert (tmp_path / "notes.md").read_text() == "- my sister Ana lives in Porto\n"


def test_ambiguous_and_missing_text_list_the_candidates(tmp_path: Path) -> None:
    notes = Notes(write(tmp_path / "notes.md", "- Ana likes tea\n- Ana lives in Porto\n- Bo plays chess\n"), 4096)
    with pytest.raises(NotesError, match="on 2 lines") as ambiguous:
        notes.forget("Ana")
    assert "Ana likes tea" in str(ambiguous.value) and "Ana lives in Porto" in str(ambiguous.value)
    with pytest.raises(NotesError, match="No line holds") as missing:
        notes.change("Bob plays chess", "Bo plays go")
    assert "Bo plays chess" in str(missing.value)
    assert (tmp_path / "notes.md").read_text() == "- Ana likes tea\n- Ana lives in Porto\n- Bo plays chess\n"


def test_the_line_that_is_exactly_the_text_is_the_one(tmp_path: Path) -> None:
    notes = Notes(write(tmp_path / "notes.md", "- Ana\n- Ana's birthday is in May\n"), 4096)
    notes.forget("Ana")
    assert (tmp_path / "notes.md").read_text() == "- Ana's birthday is in May\n"


def test_one_line_only(tmp_path: Path) -> None:
    notes = Notes(tmp_path / "notes.md", 4096)
    with pytest.raises(NotesError, match="one line"):
        notes.add("first\nsecond")
    with pytest.raises(NotesError, match="empty"):
        notes.add("  ")


def test_never_past_the_limit_and_says_how_much_room_is_left(tmp_path: Path) -> None:
    path = write(tmp_path / "notes.md", "- " + "x" * 90 + "\n")
    notes = Notes(path, 120)
    with pytest.raises(NotesError, match="27 bytes are left"):
        notes.add("y" * 40)
    assert path.read_text() == "- " + "x" * 90 + "\n"
    written = notes.add("short")
    assert written.size == 101 and written.room == 19


def test_a_hand_edited_file_past_the_limit_can_still_shrink(tmp_path: Path) -> None:
    path = write(tmp_path / "notes.md", "- " + "a" * 200 + "\n- keep\n")
    notes = Notes(path, 100)
    with pytest.raises(NotesError):
        notes.add("more")
    notes.forget("aaaa")
    assert path.read_text() == "- keep\n"


def test_never_writes_through_a_link(tmp_path: Path) -> None:
    outside = write(tmp_path / "outside.md", "- secret\n")
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "notes.md").symlink_to(outside)
    with pytest.raises(NotesError, match="symbolic link"):
        Notes(folder / "notes.md", 4096).add("planted")
    assert outside.read_text() == "- secret\n"
    assert (folder / "notes.md").is_symlink()


def test_written_whole_by_rename(tmp_path: Path) -> None:
    path = write(tmp_path / "notes.md", "- one\n")
    before = path.stat().st_ino
    Notes(path, 4096).add("two")
    assert path.stat().st_ino != before
    assert [p.name for p in tmp_path.iterdir()] == ["notes.md"]


_WRITER = """
import sys
from pathlib import Path
from lnk_link_memory.notes import Notes
notes = Notes(Path(sys.argv[1]), 1 << 20)
for i in range(int(sys.argv[3])):
    notes.add(f"writer {sys.argv[2]} note {i}")
"""


def test_eight_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), str(w), "25"], env={**os.environ}) for w in range(8)
    ]
    assert [w.wait(timeout=120) for w in writers] == [0] * 8
    lines = path.read_text().splitlines()
    assert sorted(lines) == sorted(f"- writer {w} note {i}" for w in range(8) for i in range(25))


def test_remember_is_found_by_search_at_once(agent: AgentFolder, memory_of: MakeMemory) -> None:
    memory = memory_of(agent)
    memory.scan()
    answer = memory.remember(add="the boat is moored at pier seven")
    assert answer.done == "added" and answer.notes == "memory/notes.md"
    assert [hit.path for hit in memory.search("pier seven").results] == ["memory/notes.md"]
    assert memory.search("pier seven").results[0].kind == "notes"


def test_remember_takes_one_thing_at_a_time(agent: AgentFolder, memory_of: MakeMemory) -> None:
    memory = memory_of(agent)
    with pytest.raises(AskError, match="Give one of"):
        memory.remember(add="a", forget="b")
    with pytest.raises(AskError, match="go together"):
        memory.remember(change="a")


def test_no_notes_named_means_nothing_written(agent: AgentFolder, memory_of: MakeMemory) -> None:
    memory = memory_of(agent, notes=False)
    assert not memory.writable
    with pytest.raises(AskError, match="no notes"):
        memory.remember(add="x")
    assert not agent.notes.exists()
