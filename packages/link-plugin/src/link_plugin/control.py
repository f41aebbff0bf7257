"""The client of an agent's control socket: what the supervisor says of the agent, and the owner's answers.

The supervisor serves its control socket in Link's settings folder (0600, never shown to a
sandbox): `GET /status` (the running agent's state, as `lnk agent status` shows it), and the
tool calls waiting for the owner's yes (`GET /approvals`, `POST /approvals/<id>` with
`{"allow": true|false}`), which a channel's bridge or `lnk agent chat` asks in the owner's chat.
The questions themselves are models (`link_plugin.approvals`); this is the one client that
speaks to the socket, each request on a connection of its own.
"""

from __future__ import annotations

import asyncio
import json
from functools import cache
from typing import TYPE_CHECKING, Any

import h11

from link_plugin.endpoint import Connection, EndpointError, EndpointUnreachable
from link_plugin.waits import within

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from link_plugin.approvals import Question


@cache
def _questions() -> TypeAdapter[list[Question]]:
    """The reader of a list of questions, made when one is first read: most lists are empty, and
    a chat as short as `lnk agent chat -m` then loads no pydantic."""
    from pydantic import TypeAdapter

    from link_plugin.approvals import Question

    return TypeAdapter(list[Question])


class ControlClient:
    """One agent's control socket, asked one request at a time."""

    def __init__(self, socket: str, timeout: float = 10.0) -> None:
        self.socket = socket
        self.timeout = timeout

    async def _ask(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        """One request on a connection of its own; a socket that is gone, breaks or stalls is unreachable."""
        try:
            return await within(self._exchange(method, path, body), self.timeout)
        except (OSError, TimeoutError, h11.ProtocolError, asyncio.IncompleteReadError) as exc:
            raise EndpointUnreachable(f"the agent's control socket can't be reached ({exc})") from exc

    async def _exchange(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        reader, writer = await asyncio.open_unix_connection(self.socket)
        connection = Connection(reader, writer, "lnk")
        try:
            response = await connection.request(method, path, {}, body)
            return response.status, await connection.body()
        finally:
            await connection.close()

    async def status(self) -> dict[str, Any]:
        """The running agent's state, as its supervisor says it."""
        status, raw = await self._ask("GET", "/status", None)
        if status != 200:
            raise EndpointUnreachable(f"the control socket answered {status}")
        try:
            found = json.loads(raw)
        except ValueError as exc:
            raise EndpointError("the control socket's status is not JSON") from exc
        if not isinstance(found, dict):
            raise EndpointError("the control socket's status is not an object")
        return found

    async def waiting(self) -> list[Question]:
        status, raw = await self._ask("GET", "/approvals", None)
        if status != 200:
            raise EndpointUnreachable(f"the control socket answered {status}")
        if raw.strip() == b"[]":  # nothing waits, as is usual: no reader to make for it
            return []
        from pydantic import ValidationError

        try:
            return _questions().validate_json(raw)
        except ValidationError as exc:
            raise EndpointError(
                f"the control socket's list of waiting calls doesn't read ({exc.error_count()} errors)"
            ) from exc

    async def answer(self, question: str, allow: bool) -> bool:
        """Send the owner's answer; False when the question no longer waits (answered, or timed out)."""
        status, _ = await self._ask("POST", f"/approvals/{question}", json.dumps({"allow": allow}).encode())
        return status == 200


ApprovalsClient = ControlClient
"""The name a bridge has imported it by since the first release (`link_plugin.approvals.ApprovalsClient`)."""
