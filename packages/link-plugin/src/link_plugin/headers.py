"""The Link headers of a request to a harness endpoint, their names and how each parses.

Plain functions of strings, with no model behind them: a bridge's client sends these on every
message, and a program as short-lived as `lnk agent chat -m` loads this without pydantic. The
headers parsed together, into models, are `link_plugin.wire.RequestHeaders`; `link_plugin.wire`
names everything here too.
"""

from __future__ import annotations

import re

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

RECOVER_PATH = "/_link/recover"

_TOOL = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_MESSAGE_ID = re.compile(r"^[A-Za-z0-9_.:@+=-]{1,128}$")


class WireError(LinkError):
    """A header that doesn't parse: the request is refused with 400 and this message."""


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
