"""3. In a new conversation (a group where the owner mentions the bot) the owner asks what they told
the agent before: the model calls `search`, whose result holds the note; the notes are in the
prompt too. Nothing of the first conversation is in this one's messages: the agent knows from
memory."""

from __future__ import annotations

import json

from lnk_e2e.model import Model
from lnk_e2e.phone import Phone

FAMILY = -1001234567


def test_a_new_conversation_finds_the_note_by_search(owner: Phone, model: Model) -> None:
    said = owner.in_group(FAMILY).ask(model, "What is my sister called?", calls=2)

    assert said.answer == "Your sister is called Ana."
    system, *conversation = said.asked[0].json["messages"]
    assert "My sister is called Ana." in system["content"]  # the notes reach the prompt
    assert "Remember that" not in json.dumps(conversation)  # a conversation of its own
    assert said.tool_call[0] == "search"
    hits = [hit for hit in said.tool_result["results"] if "My sister is called Ana." in hit["text"]]
    assert hits, said.tool_result
    assert hits[0]["path"].endswith("notes.md")
