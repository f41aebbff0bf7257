"""What a turn asks of a conversation, as the harness answers it: shared by a test and the new
processes it starts."""

from __future__ import annotations

from typing import Any

from lnk_harness.conversation import Conversation


def facts(conversation: Conversation) -> dict[str, Any]:
    history = conversation.history()
    return {
        "last": history.last,
        "unseen": history.unseen(),
        "unanswered": history.unanswered(),
        "answer": history.answer,
        "delivered": history.delivered,
        "turn_text": history.turn_text(),
        "open_calls": [(call.id, made) for call, made in history.open_calls()],
        "owners": history.owners,
    }
