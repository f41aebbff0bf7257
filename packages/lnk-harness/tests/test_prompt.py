"""The agent's instructions and notes go into every prompt, the notes up to their cap."""

from __future__ import annotations

from pathlib import Path

from conftest import MAIN
from helpers import Harness, say, settings_for

from link_conformance.provider import StandInProvider
from lnk_harness.prompt import instructions, notes


def test_instructions_and_notes_reach_the_model_and_are_read_at_every_turn(
    tmp_path: Path, provider: StandInProvider
) -> None:
    settings = settings_for(tmp_path, MAIN, provider.url, notes_max=64)
    home = Path(settings.folders.home)
    (home / "instructions" / "a-style.md").write_text("Be brief.")
    (home / "instructions" / "b-people.txt").write_text("Ana's sister is Bea.")
    (home / "instructions" / "image.png").write_bytes(b"\x89PNG")
    notes_file = home / "memory" / "notes.md"
    notes_file.write_text("- likes tea\n" + "- filler line\n" * 20)
    with Harness([settings]) as harness:
        say(harness, "hi", "kit:prompt")
        system = provider.requests[-1].json["messages"][0]
        assert system["role"] == "system"
        text = system["content"]
        assert text.index("Be brief.") < text.index("Ana's sister is Bea.")
        assert "PNG" not in text
        assert "- likes tea" in text
        assert text.count("- filler line") == 3, "12 + 3 × 14 bytes: up to 64, in whole lines"
        assert "cut here" in text
        notes_file.write_text("- moved to Lisbon\n")
        say(harness, "again", "kit:prompt")
        assert "- moved to Lisbon" in provider.requests[-1].json["messages"][0]["content"]


def test_notes_are_cut_on_a_whole_line_and_none_is_no_section(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    assert notes(path, 4096) == ""
    path.write_text("one\ntwo\nthree\n")
    assert notes(path, 4096) == "one\ntwo\nthree"
    cut = notes(path, 9)
    assert cut.startswith("one\ntwo\n") and "three" not in cut and "14 bytes" in cut
    assert notes(path, 0) == ""


def test_a_link_in_instructions_is_not_followed(tmp_path: Path) -> None:
    folder = tmp_path / "instructions"
    folder.mkdir()
    secret = tmp_path / "secret.md"
    secret.write_text("the owner's bank PIN")
    (folder / "linked.md").symlink_to(secret)
    (folder / "own.md").write_text("Be kind.")
    told = instructions(folder)
    assert "Be kind." in told and "PIN" not in told
