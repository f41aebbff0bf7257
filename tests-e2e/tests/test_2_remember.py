"""2. The owner tells the agent something to remember: the model calls `remember`, the note lands in
Home/memory/notes.md, and the answer streams back to the phone as edits of one message."""

from __future__ import annotations

from conftest import AGENT

from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_e2e.phone import Phone


def test_remember_keeps_the_note_and_the_answer_streams(machine: Machine, owner: Phone, model: Model) -> None:
    said = owner.ask(model, "Remember that my sister is called Ana", calls=2)

    answer = said.answer
    assert answer == "I'll remember that: My sister is called Ana."
    assert "remember" in said.asked[0].tool_names
    assert said.tool_call == ("remember", {"add": "My sister is called Ana."})
    assert said.tool_result["line"] == "- My sister is called Ana."

    notes = machine.folder(AGENT) / "Home" / "memory" / "notes.md"
    assert "- My sister is called Ana." in notes.read_text().splitlines()

    texts = [text for _, text in said.shown.history]
    assert len(texts) >= 2, f"the answer came in one piece, not streamed: {texts}"
    assert all(answer.startswith(text) for text in texts), texts
    assert len(owner.showing(answer)) == 1
