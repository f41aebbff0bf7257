"""Reading a Discord message (who sent it, where, whether it mentions the bot, its text, its key,
the bot's message it replies to) and a press of a button (who pressed it, under which message).

A message's key (`Link-Message-Id`) is its id: Discord's ids (snowflakes) are unique across all
of Discord and the same whenever the Gateway hands the message over again (replayed to a session
resuming from before it).

Discord marks a mention of the bot as `<@id>` in the text and lists the bot in the message's
mentions; a reply mentions its author unless the replier turns that off, so only a mention in
the text counts, as a reply to the bot alone is no mention. The bot's mention is taken out, so the
agent reads what was written to it.
"""

from __future__ import annotations

import discord

from link_plugin.bridge.rules import Heard, Incoming, Press
from link_plugin.endpoint import message_id


def read(message: discord.Message, me: int, *, edited: bool = False) -> Heard | None:
    """The message as the bridge's rules see it; None for one no person sent (a bot's, a system message)."""
    if message.author.bot or message.author.id == me or message.type not in _WRITTEN:
        return None
    direct = isinstance(message.channel, discord.DMChannel)
    marks = (f"<@{me}>", f"<@!{me}>")
    incoming = Incoming(
        sender=str(message.author.id),
        direct=direct,
        mentioned=not direct and me in message.raw_mentions and any(mark in message.content for mark in marks),
    )
    written = message.content
    if not direct:
        for mark in marks:
            written = written.replace(mark, " ")
        written = " ".join(written.split())
    text = None if not message.content.strip() and (message.attachments or message.stickers) else written
    return Heard(
        incoming=incoming,
        chat=str(message.channel.id),
        text=text,
        key=message_id(message.id),
        replied=_replied_to(message, me),
        edited=edited,
    )


_WRITTEN = (discord.MessageType.default, discord.MessageType.reply)
"""Messages a person wrote; the rest (joins, pins, a thread's start) are no message to the agent."""


def pressed(interaction: discord.Interaction) -> Press | None:
    """A button press as the bridge's rules see it; None for any other interaction."""
    if interaction.type is not discord.InteractionType.component or interaction.message is None:
        return None
    data: dict[str, object] = dict(interaction.data or {})
    value = str(data.get("custom_id", ""))
    incoming = Incoming(sender=str(interaction.user.id), direct=interaction.guild_id is None)
    return Press(incoming=incoming, message=str(interaction.message.id), value=value)


def _replied_to(message: discord.Message, me: int) -> str | None:
    """The bot's message this one replies to, if any."""
    reference = message.reference
    if reference is None or reference.message_id is None:
        return None
    resolved = reference.resolved
    if isinstance(resolved, discord.Message) and resolved.author.id != me:
        return None
    return str(reference.message_id)
