"""Reading what signal-cli hears (a `receive` notification's envelope): who sent it, where, whether
it mentions the agent's account, its text, its key, the agent's message it quotes.

A Signal message is named by its sender and the timestamp its sender gave it: the same whenever
signal-cli hands it over again (after a restart, from its cache), and a message's key
(`Link-Message-Id`) is `<sender>:<timestamp>`. A direct chat is the owner's number; a group is
`group.<its id>` (Signal's group id, base64, in its URL-safe spelling, so the thread is a safe
folder name).

Signal puts a mention in the text as U+FFFC and lists who it names, with where, in `mentions`:
a group message mentions the agent when one names its account. The agent's own mention is taken
out; anyone else's reads as `@<name>`. Receipts, typing, reactions, stories, sync messages from
the account's other devices and group updates carry no message to the agent.
"""

from __future__ import annotations

from typing import Any

from link_plugin.bridge.rules import Heard, Incoming
from link_plugin.endpoint import message_id
from lnk_signal.section import Section

MENTION = "\ufffc"
GROUP = "group."


def group_chat(group_id: str) -> str:
    """A group's chat id from its Signal id."""
    return GROUP + group_id.replace("+", "-").replace("/", "_")


def group_id(chat: str) -> str | None:
    """The Signal id of the group `chat` names; None for a direct chat."""
    if not chat.startswith(GROUP):
        return None
    return chat.removeprefix(GROUP).replace("-", "+").replace("_", "/")


def read(envelope: dict[str, Any], section: Section) -> Heard | None:
    """The message as the bridge's rules see it; None for anything that is no message from a person."""
    edit = envelope.get("editMessage")
    data = edit.get("dataMessage") if isinstance(edit, dict) else envelope.get("dataMessage")
    if not isinstance(data, dict) or _nothing_said(data):
        return None
    number, uuid = envelope.get("sourceNumber"), envelope.get("sourceUuid")
    if (number and number == section.account) or (uuid and uuid == section.account_uuid):
        return None  # the account itself, from another of its devices
    owners = (number and number == section.owner) or (uuid and section.owner_uuid and uuid == section.owner_uuid)
    sender = section.owner if owners else str(number or uuid or "")
    group = data.get("groupInfo")
    direct = not isinstance(group, dict)
    mentions = [m for m in data.get("mentions") or [] if isinstance(m, dict)]
    ours = [m for m in mentions if _names(m, section)]
    text: str | None = _written(str(data.get("message") or ""), mentions, section)
    if not str(data.get("message") or "").strip() and (data.get("attachments") or data.get("sticker")):
        text = None
    chat = group_chat(str(group.get("groupId", ""))) if isinstance(group, dict) else sender
    return Heard(
        incoming=Incoming(sender=sender, direct=direct, mentioned=not direct and bool(ours)),
        chat=chat,
        text=text,
        key=message_id(str(uuid or number), int(envelope.get("timestamp") or data.get("timestamp") or 0)),
        replied=_quoted(data, section),
        edited=isinstance(edit, dict),
    )


def _nothing_said(data: dict[str, Any]) -> bool:
    """A data message with no words, file or sticker: a reaction, a deletion, a group's update."""
    return not (data.get("message") or data.get("attachments") or data.get("sticker"))


def _names(mention: dict[str, Any], section: Section) -> bool:
    number, uuid = mention.get("number"), mention.get("uuid")
    return bool((number and number == section.account) or (uuid and uuid == section.account_uuid))


def _written(message: str, mentions: list[dict[str, Any]], section: Section) -> str:
    """The text with the agent's mention taken out and anyone else's as `@name`."""
    if not mentions:
        return message
    # Signal counts where a mention starts in UTF-16 code units, as Java does.
    units = message.encode("utf-16-le")
    for mention in sorted(mentions, key=lambda m: int(m.get("start", 0)), reverse=True):
        start, length = int(mention.get("start", 0)), int(mention.get("length", 1))
        name = "" if _names(mention, section) else f"@{mention.get('name') or mention.get('number') or ''}"
        units = units[: start * 2] + name.encode("utf-16-le") + units[(start + length) * 2 :]
    return " ".join(units.decode("utf-16-le").replace(MENTION, " ").split())


def _quoted(data: dict[str, Any], section: Section) -> str | None:
    """The agent's message this one quotes (Signal's reply), if any."""
    quote = data.get("quote")
    if not isinstance(quote, dict) or quote.get("id") is None:
        return None
    author = {quote.get("author"), quote.get("authorNumber"), quote.get("authorUuid")}
    if not author & {section.account, section.account_uuid} - {""}:
        return None
    return str(quote["id"])
