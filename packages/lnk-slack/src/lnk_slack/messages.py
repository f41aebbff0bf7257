"""Reading a Slack event (who sent it, where, whether it mentions the app, its text, its key, the
message it replies to) and a press of a button (who pressed it, under which message).

A message's key (`Link-Message-Id`) is `<channel id>:<ts>`. Slack stamps each message with a `ts`
unique within its channel, and hands an event over again with the same message in it when it
missed the acknowledgement, so the key is the same then; and one message that reaches the app as
two events (`app_mention` and `message` in a channel) is one key. (An envelope's id would not
do: each delivery has its own.)

Slack's message text escapes `&`, `<` and `>`, and marks a mention as `<@U...>`: the app's own
mention is taken out, the rest unescaped, so the agent reads what was written.
"""

from __future__ import annotations

from typing import Any

from link_plugin.bridge.rules import Heard, Incoming, Press
from link_plugin.endpoint import message_id

_KEPT = {None, "file_share", "thread_broadcast", "message_changed"}
"""Subtypes of a message a person wrote; the rest (joins, deletions, a bot's) are no message to the agent."""


def read(event: dict[str, Any], me: str) -> Heard | None:
    """The event as the bridge's rules see it; None for one no person wrote (the app's own, a join)."""
    if event.get("type") not in ("message", "app_mention") or event.get("subtype") not in _KEPT:
        return None
    edited = event.get("subtype") == "message_changed"
    message: dict[str, Any] = (event.get("message") or {}) if edited else event
    sender = message.get("user")
    if not sender or sender == me or message.get("bot_id"):
        return None
    channel = str(event.get("channel", ""))
    direct = event.get("channel_type") == "im" or channel.startswith("D")
    written = str(message.get("text") or "")
    incoming = Incoming(sender=str(sender), direct=direct, mentioned=not direct and f"<@{me}>" in written)
    text: str | None = unescape(written if direct else " ".join(written.replace(f"<@{me}>", " ").split()))
    if message.get("subtype") == "file_share" and not written.strip():
        text = None
    thread = message.get("thread_ts")
    return Heard(
        incoming=incoming,
        chat=channel,
        text=text,
        key=message_id(channel, message["ts"]),
        replied=str(thread) if thread and thread != message["ts"] else None,
        edited=edited,
    )


def thread_of(event: dict[str, Any]) -> str | None:
    """The thread a message in a channel was written in, where its answer goes too."""
    thread = event.get("thread_ts")
    return str(thread) if thread else None


def pressed(payload: dict[str, Any]) -> Press | None:
    """A button press (`block_actions`) as the bridge's rules see it; None for any other interaction."""
    actions = payload.get("actions") or []
    container = payload.get("container") or {}
    if payload.get("type") != "block_actions" or not actions or container.get("type") != "message":
        return None
    channel = str(container.get("channel_id", ""))
    incoming = Incoming(sender=str(payload["user"]["id"]), direct=channel.startswith("D"))
    return Press(incoming=incoming, message=str(container["message_ts"]), value=str(actions[0].get("value", "")))


def escape(text: str) -> str:
    """Text as Slack takes it: `&`, `<` and `>` escaped, so nothing the agent wrote reads as a link or a mention."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
