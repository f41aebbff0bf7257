"""The engine's note of what it sent, by ref: a send repeated after the engine died is answered
with the message sent before, also by the next engine."""

from __future__ import annotations

from pathlib import Path

from lnk_whatsapp import sent
from lnk_whatsapp.sent import SentNotes


def test_a_ref_sent_before_is_known_to_the_next_engine(tmp_path: Path) -> None:
    notes = SentNotes(tmp_path / sent.FILE)
    notes.add("chat:abc:0", "3EB0AAA")
    assert SentNotes(tmp_path / sent.FILE).get("chat:abc:0") == "3EB0AAA"
    assert SentNotes(tmp_path / sent.FILE).get("chat:abc:1") is None


def test_a_line_cut_short_by_a_crash_is_skipped(tmp_path: Path) -> None:
    notes = SentNotes(tmp_path / sent.FILE)
    notes.add("one", "A")
    with (tmp_path / sent.FILE).open("a") as file:
        file.write('{"ref": "two", "mess')
    again = SentNotes(tmp_path / sent.FILE)
    assert again.get("one") == "A" and again.get("two") is None


def test_the_file_keeps_the_latest_only(tmp_path: Path, monkeypatch: object) -> None:
    notes = SentNotes(tmp_path / sent.FILE)
    for number in range(3 * sent.KEPT):
        notes.add(f"ref{number}", f"id{number}")
    again = SentNotes(tmp_path / sent.FILE)
    assert again.get(f"ref{3 * sent.KEPT - 1}") is not None and again.get("ref0") is None
    assert len((tmp_path / sent.FILE).read_text().splitlines()) <= 2 * sent.KEPT
