"""Reading a WhatsApp message, as the engine reports it, into the bridge's terms.

A message's key (`Link-Message-Id`) is its sender and WhatsApp's id for it: ids are the sender's
device's, and the same when WhatsApp delivers the message again (to an engine that restarted
before it was acknowledged), so it is carried once.

WhatsApp marks a mention as `@<number>` in the text and lists who it mentions with the message;
the account is mentioned by its number or its hidden id. Only a listed mention counts (a reply
to the account's message alone is no mention), and the mention is taken out, so the agent reads
what was written to it.
"""

from __future__ import annotations

from link_plugin.bridge.rules import Heard, Incoming
from link_plugin.endpoint import message_id
from lnk_whatsapp.protocol import Message


def read(message: Message, me: list[str]) -> Heard:
    """The message as the bridge's rules see it; `me` the account's number and hidden id."""
    mentioned = message.group and any(who in me for who in message.mentions)
    text = message.text
    if text is not None and message.group:
        for who in me:
            text = text.replace(f"@{who}", " ")
        text = " ".join(text.split())
    return Heard(
        incoming=Incoming(sender=message.sender, direct=not message.group, mentioned=mentioned),
        chat=message.chat,
        text=text,
        key=message_id(message.sender, message.id),
        replied=message.quoted,
        edited=message.edited,
    )
