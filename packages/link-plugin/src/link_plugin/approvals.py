"""Tool calls waiting for the owner's yes, asked in the owner's chat by a channel's bridge.

The core's tool bridge holds a call its tool's server doesn't list as "don't ask first" until the
owner answers. A bridge is handed the agent's control socket (`BridgeSpec.approvals`): it asks
what waits (`GET /approvals`), asks the owner in their chat, and sends what they said
(`POST /approvals/<id>` with `{"allow": true|false}`). The socket is in Link's settings folder,
which no sandbox shows, so the harness can't answer for the owner; and the owner's answer is
taken by the bridge, never passed on to the harness as a message.

Models only: a question and how a reply reads. The client that asks the socket is
`link_plugin.control.ControlClient`, also importable from here as `ApprovalsClient` (loaded when
first used, so importing the models loads no client).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from pydantic import Field

from link_plugin.model import Model

if TYPE_CHECKING:
    from link_plugin.control import ApprovalsClient as ApprovalsClient

YES = frozenset({"y", "yes", "ok", "allow", "sure"})
NO = frozenset({"n", "no", "deny", "refuse", "stop"})


class Question(Model):
    """One tool call waiting for the owner."""

    id: str
    tool: str
    """The tool's name (memory-<id>, or one added with `lnk sandbox tool add`)."""
    call: str
    """The call the harness made of it."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    asked: float = Field(default_factory=time.time)

    def wording(self) -> str:
        """How the question reads in a chat."""
        arguments = json.dumps(self.arguments, ensure_ascii=False)
        if len(arguments) > 500:
            arguments = arguments[:500] + "…"
        return f"{self.tool} wants to run {self.call} with {arguments}. Allow it? (yes or no)"


def reads_as(text: str) -> bool | None:
    """The owner's reply as an answer: True for yes, False for no, None when it is neither."""
    word = text.strip().lower().rstrip(".!")
    return True if word in YES else False if word in NO else None


def __getattr__(name: str) -> Any:
    if name == "ApprovalsClient":
        from link_plugin.control import ApprovalsClient

        return ApprovalsClient
    raise AttributeError(f"module 'link_plugin.approvals' has no attribute {name!r}")
