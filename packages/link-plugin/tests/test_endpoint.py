"""The bridge's client: proof first, then key and message on the very same connection."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from link_conformance.serving import Served
from link_plugin import wire
from link_plugin.channel import EndpointRef
from link_plugin.endpoint import (
    EndpointClient,
    EndpointError,
    EndpointRefused,
    EndpointUnreachable,
    ProofFailed,
    message_id,
    new_message_id,
)
from link_plugin.harness import AgentRef

KEY = "the-endpoint-key"
AGENT = AgentRef(name="main", id="abcdefabcdef", owner="me@here")


@dataclass
class Harness:
    """A stand-in endpoint recording which connection each request came on."""

    honest: bool = True
    steer: bool = False
    garbled: bool = False
    """Answer recovery with a body that isn't a list of answers."""
    seen: list[tuple[str, int, dict[str, str]]] = field(default_factory=list)
    kept: list[wire.Undelivered] = field(
        default_factory=lambda: [wire.Undelivered(id="a1", thread="telegram:1", content="late answer")]
    )

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route(wire.PROOF_PATH, self.proof, methods=["POST"]),
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route(wire.RECOVER_PATH, self.recover, methods=["GET", "POST"]),
            ]
        )

    def _note(self, request: Request) -> None:
        assert request.client is not None
        self.seen.append((request.url.path, request.client.port, dict(request.headers)))

    async def proof(self, request: Request) -> Response:
        self._note(request)
        challenge = (await request.json())["challenge"]
        return JSONResponse({"proof": wire.prove(KEY if self.honest else "guess", challenge)})

    async def chat(self, request: Request) -> Response:
        self._note(request)
        if request.headers.get("authorization") != f"Bearer {KEY}":
            return JSONResponse({"error": "key"}, status_code=401)
        if self.steer:
            return Response(status_code=202, headers={wire.STEERED: "1"})
        said = (await request.json())["messages"][-1]["content"]

        async def stream() -> AsyncIterator[bytes]:
            for piece in ("you ", "said ", said):
                yield f"data: {json.dumps({'choices': [{'delta': {'content': piece}}]})}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream", headers={wire.ANSWER_ID: "telegram:42/7"})

    async def recover(self, request: Request) -> Response:
        self._note(request)
        if request.method == "POST":
            sent = set((await request.json())["sent"])
            self.kept = [a for a in self.kept if a.id not in sent]
            return JSONResponse({})
        if self.garbled:
            return JSONResponse({"answers": [{"id": "a1"}]})
        return JSONResponse(wire.RecoverAnswer(answers=self.kept).model_dump())


@pytest.fixture
def harness() -> Harness:
    return Harness()


@pytest.fixture
def client(harness: Harness) -> Iterator[EndpointClient]:
    served = Served(harness.app()).start()
    yield EndpointClient(EndpointRef(url=f"{served.origin}/v1", key=KEY), AGENT)
    served.stop()


def test_proof_then_message_on_one_connection(harness: Harness, client: EndpointClient) -> None:
    async def ask() -> list[str]:
        async with client.chat("hello", wire.Thread.parse("telegram:42")) as reply:
            return [piece async for piece in reply.deltas()]

    assert asyncio.run(ask()) == ["you ", "said ", "hello"]
    (proof_path, proof_port, proof_headers), (chat_path, chat_port, chat_headers) = harness.seen
    assert (proof_path, chat_path) == (wire.PROOF_PATH, "/v1/chat/completions")
    assert proof_port == chat_port
    assert "authorization" not in proof_headers
    assert chat_headers["link-thread"] == "telegram:42"
    assert chat_headers["link-agent"] == "main" and chat_headers["link-agent-id"] == "abcdefabcdef"


def test_a_false_endpoint_never_gets_the_key(harness: Harness, client: EndpointClient) -> None:
    harness.honest = False

    async def ask() -> None:
        async with client.chat("hello", wire.Thread.parse("telegram:42")):
            pass

    with pytest.raises(ProofFailed, match="key was not sent"):
        asyncio.run(ask())
    assert [path for path, _, _ in harness.seen] == [wire.PROOF_PATH]
    assert all(KEY not in json.dumps(headers) for _, _, headers in harness.seen)


def test_steered_has_no_body(harness: Harness, client: EndpointClient) -> None:
    harness.steer = True

    async def ask() -> tuple[bool, str]:
        async with client.chat("also this", wire.Thread.parse("telegram:42")) as reply:
            return reply.steered, await reply.text()

    assert asyncio.run(ask()) == (True, "")


def test_sender_and_tools_headers(harness: Harness, client: EndpointClient) -> None:
    async def ask() -> None:
        async with client.chat(
            "task",
            wire.Thread.parse("link:sub1"),
            sender=wire.Sender(who="scheduler", hops=1),
            tools=frozenset({"beta", "alpha"}),
        ) as reply:
            await reply.text()

    asyncio.run(ask())
    headers = harness.seen[-1][2]
    assert (headers["link-from"], headers["link-hops"], headers["link-tools"]) == ("scheduler", "1", "alpha,beta")


def test_a_message_goes_with_its_key_and_its_answer_names_its_id(harness: Harness, client: EndpointClient) -> None:
    async def ask() -> str | None:
        async with client.chat("hi", wire.Thread.parse("telegram:42"), message_id=message_id(42, 9001)) as reply:
            await reply.text()
            return reply.answer_id

    assert asyncio.run(ask()) == "telegram:42/7"
    assert harness.seen[-1][2]["link-message-id"] == "42:9001"


def test_a_key_is_well_formed_or_refused_before_anything_is_sent(harness: Harness, client: EndpointClient) -> None:
    fresh = {new_message_id() for _ in range(100)}
    assert len(fresh) == 100 and all(len(key) == 32 for key in fresh)
    assert message_id(-100123, 45) == "-100123:45"

    async def ask(key: str) -> None:
        async with client.chat("hi", wire.Thread.parse("telegram:42"), message_id=key):
            pass

    for bad in ("", "two words", "x" * 129, "line\nbreak"):
        with pytest.raises(wire.WireError, match="Link-Message-Id"):
            asyncio.run(ask(bad))
    assert harness.seen == []


def test_recover_in_two_steps(harness: Harness, client: EndpointClient) -> None:
    first = asyncio.run(client.recover())
    assert [a.content for a in first] == ["late answer"]
    assert [a.id for a in asyncio.run(client.recover())] == ["a1"], "kept until confirmed"
    asyncio.run(client.confirm(["a1"]))
    assert asyncio.run(client.recover()) == []


def test_a_garbled_recovery_is_the_endpoints_error(harness: Harness, client: EndpointClient) -> None:
    """Said as an endpoint error, which a bridge's recovery logs and asks again after, never a
    validation error that would end its recovery for good."""
    harness.garbled = True
    with pytest.raises(EndpointError, match="isn't a list of answers"):
        asyncio.run(client.recover())


def test_nobody_listening_is_unreachable() -> None:
    client = EndpointClient(EndpointRef(url="http://127.0.0.1:9/v1", key=KEY), AGENT)
    with pytest.raises(EndpointUnreachable):
        asyncio.run(client.recover())


def test_a_port_that_takes_the_connection_and_answers_nothing_is_unreachable() -> None:
    """As a sandbox's published port does before the harness inside listens: no hang, no other error."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        client = EndpointClient(EndpointRef(url=f"http://127.0.0.1:{port}/v1", key=KEY), AGENT, timeout=0.3)
        with pytest.raises(EndpointUnreachable, match="answered nothing"):
            asyncio.run(asyncio.wait_for(client.recover(), 5))


def test_refusal_carries_the_status(harness: Harness) -> None:
    served = Served(harness.app()).start()
    try:
        client = EndpointClient(EndpointRef(url=f"{served.origin}/v1", key="wrong", proof=False), AGENT)

        async def ask() -> None:
            async with client.chat("hello", wire.Thread.parse("telegram:42")):
                pass

        with pytest.raises(EndpointRefused) as refused:
            asyncio.run(ask())
        assert refused.value.status == 401
    finally:
        served.stop()


def test_the_proof_alone_says_what_was_answered_and_never_sends_the_key(
    harness: Harness, client: EndpointClient
) -> None:
    proof = asyncio.run(client.prove())
    assert (proof.status, proof.holds) == (200, True)
    harness.honest = False
    assert asyncio.run(client.prove()).holds is False
    assert [path for path, _, _ in harness.seen] == [wire.PROOF_PATH, wire.PROOF_PATH]
    assert all(KEY not in json.dumps(headers) for _, _, headers in harness.seen)


def test_ready_only_when_the_endpoint_proves_it_is_the_agents(harness: Harness, client: EndpointClient) -> None:
    assert asyncio.run(client.ready()) is True
    harness.honest = False
    assert asyncio.run(client.ready()) is False
    nobody = EndpointClient(EndpointRef(url="http://127.0.0.1:9/v1", key=KEY), AGENT)
    assert asyncio.run(nobody.ready()) is False


def test_ready_without_the_proof_when_it_answers_http(harness: Harness) -> None:
    served = Served(harness.app()).start()
    try:
        client = EndpointClient(EndpointRef(url=f"{served.origin}/v1", key=KEY, proof=False), AGENT)
        assert asyncio.run(client.ready()) is True
    finally:
        served.stop()
    assert [path for path, _, _ in harness.seen] == []


def test_a_port_that_answers_nothing_is_not_ready() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        for proof in (True, False):
            client = EndpointClient(
                EndpointRef(url=f"http://127.0.0.1:{port}/v1", key=KEY, proof=proof), AGENT, timeout=0.3
            )
            assert asyncio.run(asyncio.wait_for(client.ready(), 5)) is False
