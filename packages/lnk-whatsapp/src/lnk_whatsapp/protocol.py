"""The JSON lines between the bridge and `lnk-whatsapp engine`, one object a line each way.

The engine is the only process that speaks WhatsApp (neonize, with whatsmeow inside); the bridge
and `connect` drive it over its stdin and stdout, so everything they do is tested against a fake
engine speaking these lines. The engine is started as `<engine command> <folder>`, the folder
holding the linked device's state.

To the engine, a `Request` with an `id` of the caller's choosing:

    {"id": 1, "op": "send", "chat": "15551230001@s.whatsapp.net", "text": "hi", "ref": "c1:…"}
    {"id": 2, "op": "typing", "chat": "…"}                 shows "typing…" for a few seconds
    {"id": 3, "op": "react", "chat": "…", "message": "<id>", "sender": "<number>", "emoji": "👀"}
    {"id": 4, "op": "edit", "chat": "…", "message": "<id>", "text": "…"}
    {"id": 5, "op": "pair", "phone": "15551230002"}        a pair code for linking that number
    {"id": 6, "op": "ping"}                                answered without the network
    {"id": 7, "op": "logout"}                              unlink the device

From the engine, a `Reply` to each request (same `id`), in any order, and `Event`s as they come:
`qr` (a code to show as a QR while unlinked), `linked` (the phone accepted the device), `ready`
(connected and logged in, `me` naming the account), `message`, `logged_out` (the phone removed
the device: link again), `disconnected` (the network went; the engine reconnects by itself).

A send carries the bridge's `ref` for it: the engine sends each ref once and answers a ref it sent
before with the same message, even after a restart, so a send repeated because the engine died
before it answered never shows twice. A failed reply says whether calling again is safe
(`again`: the network broke before the call could land) or when (`retry_after`: WhatsApp's rate
limit).
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

Op = Literal["ping", "send", "typing", "react", "edit", "pair", "logout"]


class Request(BaseModel):
    id: int
    op: Op
    chat: str | None = None
    """The chat's JID: `<number>@s.whatsapp.net`, `<id>@g.us` (a group), `<id>@lid`."""
    text: str | None = None
    ref: str | None = None
    """send: the bridge's name for this message, sent once whatever happens to the engine."""
    quote: str | None = None
    """send: the id of a message in the chat the new one replies to (the owner's, in a group)."""
    message: str | None = None
    """edit, react: the id of the message it is about."""
    sender: str | None = None
    """react: the number of whoever sent `message`."""
    emoji: str | None = None
    phone: str | None = None
    """pair: the number of the account to link, digits only."""


class Reply(BaseModel):
    id: int
    ok: bool
    message: str | None = None
    """send: WhatsApp's id of the message sent."""
    code: str | None = None
    """pair: the code to type in WhatsApp, Linked devices, Link with phone number."""
    version: str | None = None
    """ping: the WhatsApp library's version."""
    error: str | None = None
    again: bool = False
    """The call failed before it could land (no connection): calling again is safe."""
    retry_after: float | None = None
    """WhatsApp's rate limit: call again after this many seconds."""


class Message(BaseModel):
    """A message the account received, as the engine read it."""

    id: str
    chat: str
    sender: str
    """The sender's number, digits only (their phone number, where WhatsApp gave a hidden id)."""
    group: bool = False
    text: str | None = None
    """None: no text (a photo, a voice note, a sticker)."""
    mentions: list[str] = Field(default_factory=list)
    """Who the message mentions, as numbers or hidden ids (digits)."""
    quoted: str | None = None
    """The id of the message it replies to, if any."""
    edited: bool = False


class Event(BaseModel):
    event: Literal["qr", "linked", "ready", "message", "logged_out", "disconnected"]
    code: str | None = None
    """qr: what the QR code holds."""
    me: list[str] = Field(default_factory=list)
    """linked, ready: the account's number, then its hidden id when it has one (digits)."""
    message: Message | None = None
    why: str | None = None


class ProtocolError(Exception):
    """A line that isn't a reply or an event."""


def parse(line: str | bytes) -> Reply | Event:
    """One line from the engine."""
    try:
        raw = json.loads(line)
        if isinstance(raw, dict) and "event" in raw:
            return Event.model_validate(raw)
        return Reply.model_validate(raw)
    except (ValueError, ValidationError) as exc:
        raise ProtocolError(f"the engine said something that isn't a reply or an event: {str(line)[:200]!r}") from exc


def line(model: BaseModel) -> bytes:
    """A model as one line."""
    return model.model_dump_json(exclude_none=True).encode() + b"\n"
