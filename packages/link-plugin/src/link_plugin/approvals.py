"""Tool calls waiting for the owner's yes, asked in the owner's chat by a channel's bridge.

The core's tool bridge holds a call its tool's server doesn't list as "don't ask first" until the
owner answers. A bridge is handed the agent's control socket (`BridgeSpec.approvals`): it asks
what waits (`GET /approvals`), asks the owner in their chat, and sends what they said
(`POST /approvals/<id>` with `{"allow": true|false}`). The socket is in Link's settings folder,
which no sandbox shows, so the harness can't answer for the owner; and the owner's answer is
taken by the bridge, never passed on to the harness as a message.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import h11
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from link_plugin.endpoint import EndpointError, EndpointUnreachable, _Connection

YES = frozenset({"y", "yes", "ok", "allow", "sure"})
NO = frozenset({"n", "no", "deny", "refuse", "stop"})


class Question(BaseModel):
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


_QUESTIONS = TypeAdapter(list[Question])


class ApprovalsClient:
    """A bridge's side of the control socket."""

    def __init__(self, socket: str, timeout: float = 10.0) -> None:
        self.socket = socket
        self.timeout = timeout

    async def _ask(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        """One request on a connection of its own; a socket that is gone, breaks or stalls is unreachable."""
        try:
            return await asyncio.wait_for(self._exchange(method, path, body), self.timeout)
        except (OSError, TimeoutError, h11.ProtocolError, asyncio.IncompleteReadError) as exc:
            raise EndpointUnreachable(f"the agent's control socket can't be reached ({exc})") from exc

    async def _exchange(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        reader, writer = await asyncio.open_unix_connection(self.socket)
        connection = _Connection(reader, writer, "lnk")
        try:
            response = await connection.request(method, path, {}, body)
            return response.status, await connection.body()
        finally:
            await connection.close()

    async def waiting(self) -> list[Question]:
        status, raw = await self._ask("GET", "/approvals", None)
        if status != 200:
            raise EndpointUnreachable(f"the control socket answered {status}")
        try:
            return _QUESTIONS.validate_json(raw)
        except ValidationError as exc:
            raise EndpointError(
                f"the control socket's list of waiting calls doesn't read ({exc.error_count()} errors)"
            ) from exc

    async def answer(self, question: str, allow: bool) -> bool:
        """Send the owner's answer; False when the question no longer waits (answered, or timed out)."""
        status, _ = await self._ask("POST", f"/approvals/{question}", json.dumps({"allow": allow}).encode())
        return status == 200
