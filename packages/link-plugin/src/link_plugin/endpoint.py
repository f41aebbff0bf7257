"""A bridge's client for a harness endpoint: the proof, then the message, on one connection.

Each call opens a connection of its own. When the endpoint says it answers the proof, the
connection first carries a random challenge, and only when the signature matches does it carry
the key and the message: a program that grabbed the port gets nothing.

Each message carries its key (`Link-Message-Id`): the channel's own id for it where the service
has one, or a fresh one (`new_message_id`). Sent again after a connection that broke before any
answer came, the same key lets the harness keep the message once. An answer's head may carry its
stable id (`Link-Answer-Id`, `ChatReply.answer_id`), the id recovery lists it by if it goes
undelivered, so a bridge can tell an answer it already showed.

The proof is checked here and nowhere else: a bridge before each message (`chat`), the core
waiting for a harness to start and the conformance kit (`prove`) all ask it of this client.
`Connection` is one HTTP/1.1 connection driven by h11, TCP or unix socket, which the control
socket's client (`link_plugin.control`) rides too.

Loading this loads no pydantic (the headers and the proof are plain functions, the models of
recovery are loaded where they're used): a client as short-lived as `lnk agent chat -m` pays
only for what it sends.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import h11

from link_plugin import headers as wire_headers
from link_plugin import proof as wire_proof
from link_plugin import sse
from link_plugin.errors import LinkError
from link_plugin.waits import within

if TYPE_CHECKING:
    from link_plugin import wire

CHAT_PATH = "/chat/completions"


class Address(Protocol):
    """Where an endpoint listens and what it holds: a `link_plugin.channel.EndpointRef` is one."""

    @property
    def url(self) -> str: ...

    @property
    def key(self) -> str: ...

    @property
    def proof(self) -> bool: ...


class Caller(Protocol):
    """The agent a client speaks for: a `link_plugin.harness.AgentRef` is one."""

    @property
    def name(self) -> str: ...

    @property
    def id(self) -> str: ...


def new_message_id() -> str:
    """A fresh key, for a message its channel gives no id of its own (a line typed in the terminal)."""
    return secrets.token_hex(16)


def message_id(*parts: str | int) -> str:
    """A channel's key for one of its messages, from what names it on the service, e.g. (chat id,
    message id): the same whenever the service hands the same message over again."""
    return wire_headers.parse_message_id(":".join(str(part) for part in parts))


class EndpointError(LinkError):
    """The endpoint could not be used for this message."""


class EndpointUnreachable(EndpointError):
    """Nothing answers on the endpoint's port, or the connection broke: try again later."""


class ProofFailed(EndpointError):
    """Something answers on the port but can't prove it holds the key: the key was not sent."""


class EndpointRefused(EndpointError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"the endpoint refused the request ({status}): {message}")
        self.status = status


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    """Names in lowercase."""


@dataclass(frozen=True)
class Proof:
    """What an endpoint answered to a challenge, and whether it proves the endpoint holds the key."""

    status: int
    headers: dict[str, str]
    body: bytes
    holds: bool


class Connection:
    """One HTTP/1.1 connection driven by h11, so every request goes on this very socket."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self._reader = reader
        self._writer = writer
        self._host = host
        self._h11 = h11.Connection(h11.CLIENT)

    async def _send(self, *events: h11.Event) -> None:
        # One write per request: a request in pieces waits, behind Nagle on any hop that has it on,
        # for the delayed ACK of its first piece (about 40 ms).
        self._writer.write(b"".join(self._h11.send(event) or b"" for event in events))
        await self._writer.drain()

    async def _next(self) -> h11.Event:
        while True:
            event = self._h11.next_event()
            if isinstance(event, h11.Event):
                return event
            if event is not h11.NEED_DATA:
                raise EndpointUnreachable("the endpoint's connection stopped in an unexpected state")
            self._h11.receive_data(await self._reader.read(65536))

    async def request(self, method: str, path: str, headers: dict[str, str], body: bytes | None) -> Response:
        if self._h11.our_state is h11.DONE and self._h11.their_state is h11.DONE:
            self._h11.start_next_cycle()
        pairs = [("Host", self._host), *headers.items()]
        if body is not None:
            pairs += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        head = h11.Request(method=method, target=path, headers=pairs)
        await self._send(head, *([h11.Data(data=body)] if body is not None else []), h11.EndOfMessage())
        event = await self._next()
        if not isinstance(event, h11.Response):
            raise EndpointUnreachable(f"the endpoint answered no HTTP response ({type(event).__name__})")
        return Response(
            status=event.status_code,
            headers={k.decode().lower(): v.decode() for k, v in event.headers},
        )

    async def body_chunks(self) -> AsyncIterator[bytes]:
        while True:
            event = await self._next()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return
            elif isinstance(event, h11.ConnectionClosed):
                raise EndpointUnreachable("the endpoint closed the connection mid-answer")

    async def body(self) -> bytes:
        return b"".join([chunk async for chunk in self.body_chunks()])

    async def close(self) -> None:
        self._writer.close()
        with suppress(ConnectionError, OSError):
            await self._writer.wait_closed()


class ChatReply:
    """The endpoint's answer to one message: steered (202), or a stream of text."""

    def __init__(self, connection: Connection, response: Response) -> None:
        self._connection = connection
        self.status = response.status
        self.steered = response.status == 202 and wire_headers.STEERED.lower() in response.headers
        self.answer_id = response.headers.get(wire_headers.ANSWER_ID.lower()) or None
        """The answer's stable id, when the endpoint says it (a steered message: the running turn's)."""

    async def deltas(self) -> AsyncIterator[str]:
        """The answer's text as it is written, from the SSE stream of chat.completion.chunk."""
        if self.steered:
            return
        async for event in sse.aevents(self._connection.body_chunks()):
            if event.done:
                return
            text = _delta_text(event.json())
            if text:
                yield text

    async def text(self) -> str:
        return "".join([piece async for piece in self.deltas()])

    async def drain(self) -> None:
        """Read the answer to its end without showing it (one shown before), so the endpoint
        counts it delivered."""
        async for _ in self.deltas():
            pass


def _delta_text(chunk: dict[str, Any]) -> str:
    if "error" in chunk:
        raise EndpointError(f"the harness failed mid-answer: {chunk['error']}")
    choices = chunk.get("choices") or []
    if not choices:
        return ""
    delta = choices[0].get("delta") or {}
    content = delta.get("content")
    return content if isinstance(content, str) else ""


class EndpointClient:
    """Talks to one agent's endpoint as its bridge."""

    def __init__(self, endpoint: Address, agent: Caller, *, timeout: float = 10.0) -> None:
        parts = urlsplit(endpoint.url)
        if parts.hostname is None or parts.port is None:
            raise EndpointError(f"the endpoint address {endpoint.url!r} names no host and port")
        self._endpoint = endpoint
        self._agent = agent
        self._host = parts.hostname
        self._port = parts.port
        self._base = parts.path.rstrip("/")
        self._timeout = timeout

    def _agent_headers(self) -> dict[str, str]:
        return {wire_headers.AGENT: self._agent.name, wire_headers.AGENT_ID: self._agent.id}

    @asynccontextmanager
    async def _proven(self, *, checked: bool = True) -> AsyncIterator[Connection]:
        """A connection to the endpoint, proven first when it answers the proof (and `checked`)."""
        try:
            reader, writer = await within(asyncio.open_connection(self._host, self._port), self._timeout)
        except (OSError, TimeoutError) as exc:
            raise EndpointUnreachable(f"nothing answers at {self._endpoint.url} ({exc})") from exc
        sock = writer.get_extra_info("socket")
        if sock is not None:  # the proof, then the key and the message: each sent as it is written
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = Connection(reader, writer, f"{self._host}:{self._port}")
        try:
            if self._endpoint.proof and checked:
                try:
                    proof = await self._prove(connection)
                except TimeoutError:
                    # A port taken by a listener that never answers (a sandbox's, before its harness
                    # listens): nothing was sent but the challenge, so it is only unreachable.
                    raise EndpointUnreachable(
                        f"{self._endpoint.url} took the connection and answered nothing within {self._timeout:g} s"
                    ) from None
                if not proof.holds:
                    raise ProofFailed(
                        f"the program on {self._endpoint.url} could not prove it is the agent's harness; "
                        "its key was not sent",
                        "Another program may hold the harness's port: `lnk agent status` names it.",
                    )
            yield connection
        except (ConnectionError, h11.RemoteProtocolError, asyncio.IncompleteReadError) as exc:
            raise EndpointUnreachable(f"the connection to {self._endpoint.url} broke ({exc})") from exc
        finally:
            await connection.close()

    async def _prove(self, connection: Connection) -> Proof:
        challenge = wire_proof.new_challenge()
        body = wire_proof.request_body(challenge)
        response = await within(
            connection.request("POST", wire_proof.PROOF_PATH, self._agent_headers(), body), self._timeout
        )
        raw = await within(connection.body(), self._timeout)
        answer = wire_proof.answered_proof(raw) if response.status == 200 else None
        holds = answer is not None and wire_proof.proof_holds(self._endpoint.key, challenge, answer)
        return Proof(response.status, response.headers, raw, holds)

    async def prove(self) -> Proof:
        """Ask the endpoint for the proof alone, on a connection of its own, and say what it answered.
        EndpointUnreachable when nothing answers, or it answers nothing in time."""
        async with self._proven(checked=False) as connection:
            try:
                return await self._prove(connection)
            except TimeoutError:
                raise EndpointUnreachable(
                    f"{self._endpoint.url} answered no proof within {self._timeout:g} s"
                ) from None

    async def ready(self) -> bool:
        """Whether the agent's harness answers here: it proves it holds the key (an endpoint that
        answers the proof), or at least answers HTTP. A port published before the harness listens
        takes a connection and answers nothing, so a connection alone doesn't count."""
        try:
            if self._endpoint.proof:
                return (await self.prove()).holds
            async with self._proven() as connection:
                await within(connection.request("GET", self._base + "/models", {}, None), self._timeout)
                return True
        except (EndpointError, TimeoutError):
            return False

    def _keyed(self, extra: dict[str, str]) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._endpoint.key}", **self._agent_headers(), **extra}

    @asynccontextmanager
    async def chat(
        self,
        text: str,
        thread: wire.Thread | str,
        *,
        message_id: str | None = None,
        sender: wire.Sender | None = None,
        tools: frozenset[str] | None = None,
    ) -> AsyncIterator[ChatReply]:
        """Send one new message (never the history) and stream the answer. `thread` is its
        conversation, or that written as `<channel>:<chat id>`; `message_id` is its key: sent
        again, the same message goes with the same key."""
        headers = {wire_headers.THREAD: str(thread)}
        if message_id is not None:
            headers[wire_headers.MESSAGE_ID] = wire_headers.parse_message_id(message_id)
        if sender is not None:
            headers[wire_headers.FROM] = sender.who
            headers[wire_headers.HOPS] = str(sender.hops)
        if tools is not None:
            headers[wire_headers.TOOLS] = ",".join(sorted(tools))
        body = json.dumps({"model": "link", "stream": True, "messages": [{"role": "user", "content": text}]}).encode()
        async with self._proven() as connection:
            response = await connection.request("POST", self._base + CHAT_PATH, self._keyed(headers), body)
            if response.status not in (200, 202):
                raise EndpointRefused(response.status, (await connection.body()).decode()[:500])
            yield ChatReply(connection, response)

    async def recover(self) -> list[wire.Undelivered]:
        """Finished answers nobody waited for; each stays until `confirm` says it was sent."""
        from link_plugin import wire

        async with self._proven() as connection:
            response = await connection.request("GET", wire.RECOVER_PATH, self._keyed({}), None)
            raw = await connection.body()
            if response.status != 200:
                raise EndpointRefused(response.status, raw.decode()[:500])
            try:
                return wire.RecoverAnswer.model_validate_json(raw).answers
            except ValueError as exc:
                # Said as the endpoint's fault, like any other: recovery asks again, never ends.
                raise EndpointError(
                    f"the endpoint's answer to {wire.RECOVER_PATH} isn't a list of answers: {raw[:200]!r}"
                ) from exc

    async def confirm(self, sent: list[str]) -> None:
        from link_plugin import wire

        body = wire.RecoverConfirm(sent=sent).model_dump_json().encode()
        async with self._proven() as connection:
            response = await connection.request("POST", wire.RECOVER_PATH, self._keyed({}), body)
            raw = await connection.body()
            if response.status != 200:
                raise EndpointRefused(response.status, raw.decode()[:500])
