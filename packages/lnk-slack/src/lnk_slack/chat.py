"""A Slack conversation as the bridge shows things there: an answer (post, update, the steered
mark, 👀 while it's answered) and, in the owner's direct message, a tool call's question with
Allow and Deny buttons.

Slack shows no bot typing, so `typing` shows nothing; 👀 on the owner's message says it's being
answered instead (`look`, taken away by `unlook`). A reaction is named, not drawn: the steered
mark is given to Slack by its name (`eyes`, or `:eyes:`, or one of the few emoji `NAMES` knows);
one it can't name is posted in the message's thread instead.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from link_plugin.approvals import Question
from link_plugin.bridge.asking import BUTTONS
from lnk_slack.api import error, translated
from lnk_slack.messages import escape

LOOKING = "eyes"
NAMES = {
    "👀": "eyes",
    "✍️": "writing_hand",
    "✍": "writing_hand",
    "👍": "+1",
    "✅": "white_check_mark",
    "⏳": "hourglass",
}
"""Emoji a steered mark may be given as, by their Slack name."""
STYLES = {"allow": "primary", "deny": "danger"}


def question_blocks(question: Question) -> list[dict[str, Any]]:
    """The question's words, and a row of its buttons (Block Kit)."""
    buttons = [
        {
            "type": "button",
            "text": {"type": "plain_text", "text": label},
            "action_id": value,
            "value": value,
            "style": STYLES[value],
        }
        for label, value in BUTTONS
    ]
    words = {"type": "section", "text": {"type": "plain_text", "text": question.wording()}}
    return [words, {"type": "actions", "block_id": "question", "elements": buttons}]


def reaction_name(mark: str) -> str | None:
    """Slack's name for a mark, if it has one."""
    named = mark.strip().strip(":")
    if named and named.replace("_", "").replace("+", "").replace("-", "").isalnum() and named.isascii():
        return named
    return NAMES.get(mark.strip())


class SlackChat:
    """One conversation; in a channel, the answer goes in the thread the owner's message was in."""

    def __init__(
        self, web: AsyncWebClient, channel: str, message: str | None = None, *, thread: str | None = None
    ) -> None:
        self._web = web
        self._channel = channel
        self._message = message
        self._thread = thread
        self._marked = False
        """The mark went on as a reaction: what `unlook` leaves if the mark is 👀 too."""

    async def send(self, text: str) -> str:
        with translated():
            sent = await self._web.chat_postMessage(channel=self._channel, text=escape(text), thread_ts=self._thread)
        return str(sent["ts"])

    async def edit(self, message: str, text: str) -> None:
        with translated():
            await self._web.chat_update(channel=self._channel, ts=message, text=escape(text))

    async def ask(self, question: Question) -> str:
        with translated():
            sent = await self._web.chat_postMessage(
                channel=self._channel, text=escape(question.wording()), blocks=question_blocks(question)
            )
        return str(sent["ts"])

    async def settle(self, message: str, text: str) -> None:
        """The question's final words, its buttons gone (no blocks)."""
        with translated():
            await self._web.chat_update(channel=self._channel, ts=message, text=escape(text), blocks=[])

    async def typing(self) -> None:
        """Slack shows no bot typing: `look` says the message is being answered instead."""

    async def mark(self, mark: str) -> None:
        """A reaction with the mark; a mark Slack can't name is posted in the message's thread instead."""
        if self._message is None:
            return
        name = reaction_name(mark)
        if name is None:
            with translated():
                await self._web.chat_postMessage(channel=self._channel, text=mark, thread_ts=self._message)
            return
        await self._react("reactions_add", name, "already_reacted")
        self._marked = name == LOOKING

    async def look(self) -> None:
        """👀 on the owner's message while it's answered."""
        if self._message is not None:
            await self._react("reactions_add", LOOKING, "already_reacted")

    async def unlook(self) -> None:
        if self._message is not None and not self._marked:
            await self._react("reactions_remove", LOOKING, "no_reaction")

    async def _react(self, method: str, name: str, done: str) -> None:
        """Add or take away a reaction; one already there (or already gone) is done."""
        try:
            with translated():
                await getattr(self._web, method)(channel=self._channel, timestamp=self._message, name=name)
        except SlackApiError as exc:
            if error(exc) != done:
                raise
