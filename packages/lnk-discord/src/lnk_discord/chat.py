"""A Discord channel as the bridge shows things there: an answer (send, edit, typing, the steered
mark) and, in the owner's direct message, a tool call's question with Allow and Deny buttons.

Nothing the agent writes pings anyone: every message is sent with no mentions allowed.
"""

from __future__ import annotations

import discord

from link_plugin.approvals import Question
from link_plugin.bridge.asking import BUTTONS
from lnk_discord.api import translated

STYLES = {"allow": discord.ButtonStyle.success, "deny": discord.ButtonStyle.danger}
QUIET = discord.AllowedMentions.none()


def question_view() -> discord.ui.View:
    """The question's buttons. A press comes back as an interaction whose `custom_id` is the value."""
    view = discord.ui.View(timeout=None)
    for label, value in BUTTONS:
        view.add_item(discord.ui.Button(label=label, custom_id=value, style=STYLES[value]))
    return view


class DiscordChat:
    """One channel; in a server, answers reply to the owner's message so it's clear whom they answer."""

    def __init__(
        self, client: discord.Client, channel: int, message: int | None = None, *, reply: bool = False
    ) -> None:
        self._channel = client.get_partial_messageable(channel)
        self._message = message
        self._reply = reply

    async def send(self, text: str) -> str:
        reference = None
        if self._reply and self._message is not None:
            reference = discord.MessageReference(
                message_id=self._message, channel_id=self._channel.id, fail_if_not_exists=False
            )
        with translated():
            sent = await self._channel.send(text, reference=reference, allowed_mentions=QUIET)  # type: ignore[arg-type]
        return str(sent.id)

    async def edit(self, message: str, text: str) -> None:
        with translated():
            await self._channel.get_partial_message(int(message)).edit(content=text, allowed_mentions=QUIET)

    async def ask(self, question: Question) -> str:
        with translated():
            sent = await self._channel.send(question.wording(), view=question_view(), allowed_mentions=QUIET)
        return str(sent.id)

    async def settle(self, message: str, text: str) -> None:
        """The question's final words, its buttons gone."""
        with translated():
            await self._channel.get_partial_message(int(message)).edit(content=text, view=None)

    async def typing(self) -> None:
        """Discord shows it for about ten seconds, or until the bot sends a message."""
        with translated():
            await self._channel.typing()

    async def mark(self, mark: str) -> None:
        if self._message is None:
            return
        with translated():
            await self._channel.get_partial_message(self._message).add_reaction(mark)
