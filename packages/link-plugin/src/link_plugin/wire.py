"""The wire between a bridge and a harness endpoint: headers, threads and the proof.

A bridge opens a connection of its own for each message. On it, first `POST /_link/proof`
with a random challenge; the endpoint answers HMAC-SHA256(endpoint key, challenge). Only when
that matches does the same connection carry the key (Bearer) and the message. The proof is a
signature of the challenge, never the key, so asking for one gives nothing away.

The models of what goes on it are here. The header names with their parsers
(`link_plugin.headers`) and the proof (`link_plugin.proof`) need no model, so they live apart,
where a client loads them without pydantic; each is named here too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import Field

from link_plugin.headers import AGENT as AGENT
from link_plugin.headers import AGENT_ID as AGENT_ID
from link_plugin.headers import ANSWER_ID as ANSWER_ID
from link_plugin.headers import FROM as FROM
from link_plugin.headers import HEADERS as HEADERS
from link_plugin.headers import HOPS as HOPS
from link_plugin.headers import MESSAGE_ID as MESSAGE_ID
from link_plugin.headers import META_HOPS as META_HOPS
from link_plugin.headers import META_THREAD as META_THREAD
from link_plugin.headers import META_TOOLS as META_TOOLS
from link_plugin.headers import RECOVER_PATH as RECOVER_PATH
from link_plugin.headers import STEERED as STEERED
from link_plugin.headers import THREAD as THREAD
from link_plugin.headers import TOOLS as TOOLS
from link_plugin.headers import WireError as WireError
from link_plugin.headers import narrow as narrow
from link_plugin.headers import parse_hops as parse_hops
from link_plugin.headers import parse_message_id as parse_message_id
from link_plugin.headers import parse_tools as parse_tools
from link_plugin.model import Model
from link_plugin.proof import CHALLENGE_BYTES as CHALLENGE_BYTES
from link_plugin.proof import PROOF_PATH as PROOF_PATH
from link_plugin.proof import new_challenge as new_challenge
from link_plugin.proof import new_endpoint_key as new_endpoint_key
from link_plugin.proof import proof_holds as proof_holds
from link_plugin.proof import prove as prove

_CHANNEL = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
_CHAT = re.compile(r"^[A-Za-z0-9_.@+=-]{1,128}$")
_FROM_MAX = 200


class Thread(Model):
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


class Sender(Model):
    """Who a message is from when it isn't the owner, and how many hops it came."""

    who: str = Field(max_length=_FROM_MAX)
    hops: int = 0


class RequestHeaders(Model):
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


class ProofRequest(Model):
    challenge: str = Field(min_length=2 * CHALLENGE_BYTES, max_length=2 * CHALLENGE_BYTES)


class ProofAnswer(Model):
    proof: str


class Undelivered(Model):
    """A finished answer nobody waited for, kept until the bridge confirms it was sent."""

    id: str
    thread: str
    content: str


class RecoverAnswer(Model):
    answers: list[Undelivered] = Field(default_factory=list)


class RecoverConfirm(Model):
    sent: list[str]
