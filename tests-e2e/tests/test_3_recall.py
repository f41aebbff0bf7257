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
    family = owner.in_group(FAMILY)
    first, answers = len(model.requests), len(model.answers)
    model.expect(2)
    family.send("What is my sister called?")
    answer = model.answer(answers)
    family.wait_for_message(answer)

    assert answer == "Your sister is called Ana."
    asked, told = model.requests[first : first + 2]
    system, *conversation = asked.json["messages"]
    assert "My sister is called Ana." in system["content"]  # the notes reach the prompt
    assert "Remember that" not in json.dumps(conversation)  # a conversation of its own
    call = told.json["messages"][-2]["tool_calls"][0]["function"]
    assert call["name"] == "search"
    result = json.loads(told.json["messages"][-1]["content"])
    hits = [hit for hit in result["results"] if "My sister is called Ana." in hit["text"]]
    assert hits, result
    assert hits[0]["path"].endswith("notes.md")
