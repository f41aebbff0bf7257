"""The wire between a bridge and a harness endpoint: headers, threads and the proof.

A bridge opens a connection of its own for each message. On it, first `POST /_link/proof`
with a random challenge; the endpoint answers HMAC-SHA256(endpoint key, challenge). Only when
that matches does the same connection carry the key (Bearer) and the message. The proof is a
signature of the challenge, never the key, so asking for one gives nothing away.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping

from pydantic import BaseModel, Field

from link_plugin.errors import LinkError

AGENT = "Link-Agent"
AGENT_ID = "Link-Agent-Id"
THREAD = "Link-Thread"
FROM = "Link-From"
HOPS = "Link-Hops"
TOOLS = "Link-Tools"
STEERED = "Link-Steered"
MESSAGE_ID = "Link-Message-Id"
"""A request's: the message's idempotency key from its channel; a harness keeps a message once per key."""
ANSWER_ID = "Link-Answer-Id"
"""A response's: the answer's stable id, the one `/_link/recover` lists should it go undelivered."""

META_TOOLS = "link.local/tools"
"""A tool call's `_meta` key: the names of the tools the calling conversation has."""
META_THREAD = "link.local/thread"
"""A tool call's `_meta` key: the calling conversation's thread (`<channel>:<chat id>`)."""
META_HOPS = "link.local/hops"
"""A tool call's `_meta` key: how many hops the calling conversation's message came (0: the owner's)."""

HEADERS = (AGENT, AGENT_ID, THREAD, FROM, HOPS, TOOLS, STEERED, MESSAGE_ID, ANSWER_ID)

PROOF_PATH = "/_link/proof"
RECOVER_PATH = "/_link/recover"
CHALLENGE_BYTES = 32

_CHANNEL = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
_CHAT = re.compile(r"^[A-Za-z0-9_.@+=-]{1,128}$")
_TOOL = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_MESSAGE_ID = re.compile(r"^[A-Za-z0-9_.:@+=-]{1,128}$")
_FROM_MAX = 200


class WireError(LinkError):
    """A header that doesn't parse: the request is refused with 400 and this message."""


class Thread(BaseModel):
    """`Link-Thread: <channel>:<chat id>`, the conversation a message belongs to."""

    channel: str
    chat: str

    @classmethod
    def parse(cls, value: str) -> Thread:
        channel, sep, chat = value.strip().partition(":")
        if not sep or not _CHANNEL.match(channel) or not _CHAT.match(chat):
            raise WireError(
                f"{THREAD} {value!r} is not <channel>:<chat id>",
                "channel: lowercase letters, digits and '-'; chat id: letters, digits and _.@+=-",
            )
        return cls(channel=channel, chat=chat)

    def __str__(self) -> str:
        return f"{self.channel}:{self.chat}"

    @property
    def folder(self) -> str:
        """The conversation's folder name under chats/: safe as a single path component."""
        return str(self)


def parse_tools(value: str) -> frozenset[str]:
    """`Link-Tools: a, b` -> the names a conversation may use from then on."""
    names = [part.strip() for part in value.split(",") if part.strip()]
    for name in names:
        if not _TOOL.match(name):
            raise WireError(f"{TOOLS} names an invalid tool {name!r}")
    return frozenset(names)


def narrow(current: frozenset[str] | None, asked: frozenset[str]) -> frozenset[str]:
    """A later list only intersects: nothing widens a conversation's tools again."""
    return asked if current is None else current & asked


def parse_message_id(value: str) -> str:
    """`Link-Message-Id: <key>`: 1 to 128 of letters, digits and _.:@+=-."""
    if not _MESSAGE_ID.match(value):
        raise WireError(
            f"{MESSAGE_ID} {value[:40]!r} is not a message key",
            "1 to 128 characters: letters, digits and _.:@+=- (a channel's update id, a fresh id per line)",
        )
    return value


def parse_hops(value: str | None) -> int:
    if value is None or value.strip() == "":
        return 0
    if not value.strip().isdigit():
        raise WireError(f"{HOPS} {value!r} is not a count")
    return int(value)


class Sender(BaseModel):
    """Who a message is from when it isn't the owner, and how many hops it came."""

    who: str = Field(max_length=_FROM_MAX)
    hops: int = 0


class RequestHeaders(BaseModel):
    """The Link headers of one request, parsed."""

    agent: str | None = None
    agent_id: str | None = None
    thread: Thread | None = None
    sender: Sender | None = None
    tools: frozenset[str] | None = None
    message_id: str | None = None
    """The message's idempotency key (`Link-Message-Id`): None when the bridge sends none."""

    @classmethod
    def parse(cls, headers: Mapping[str, str]) -> RequestHeaders:
        """Parse from any case-insensitive mapping (starlette, httpx, a dict of lowercase)."""

        def get(name: str) -> str | None:
            value = headers.get(name)
            return value if value is not None else headers.get(name.lower())

        thread = get(THREAD)
        who = get(FROM)
        tools = get(TOOLS)
        message_id = get(MESSAGE_ID)
        sender = None
        if who is not None:
            if not who.strip() or len(who) > _FROM_MAX:
                raise WireError(f"{FROM} must name someone in at most {_FROM_MAX} characters")
            sender = Sender(who=who.strip(), hops=parse_hops(get(HOPS)))
        return cls(
            agent=get(AGENT),
            agent_id=get(AGENT_ID),
            thread=Thread.parse(thread) if thread is not None else None,
            sender=sender,
            tools=parse_tools(tools) if tools is not None else None,
            message_id=parse_message_id(message_id) if message_id is not None else None,
        )


def new_challenge() -> str:
    return secrets.token_hex(CHALLENGE_BYTES)


def prove(key: str, challenge: str) -> str:
    """The endpoint's answer to a challenge: hex HMAC-SHA256 of it under the endpoint key."""
    return hmac.new(key.encode(), challenge.encode(), hashlib.sha256).hexdigest()


def proof_holds(key: str, challenge: str, answer: str) -> bool:
    """The bridge's check, in constant time."""
    return hmac.compare_digest(prove(key, challenge), answer)


def new_endpoint_key() -> str:
    return secrets.token_urlsafe(32)


class ProofRequest(BaseModel):
    challenge: str = Field(min_length=2 * CHALLENGE_BYTES, max_length=2 * CHALLENGE_BYTES)


class ProofAnswer(BaseModel):
    proof: str


class Undelivered(BaseModel):
    """A finished answer nobody waited for, kept until the bridge confirms it was sent."""

    id: str
    thread: str
    content: str


class RecoverAnswer(BaseModel):
    answers: list[Undelivered] = Field(default_factory=list)


class RecoverConfirm(BaseModel):
    sent: list[str]
