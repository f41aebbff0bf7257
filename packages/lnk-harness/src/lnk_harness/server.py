"""The endpoint: chat completions for the bridges (and any OpenAI client), the proof, recover, health.

    POST /v1/chat/completions   one new message; the answer streamed (SSE) or whole
    GET  /v1/models
    POST /_link/proof           HMAC-SHA256(endpoint key, challenge): a signature, never the key
    GET  /_link/recover         finished answers nobody waited for
    POST /_link/recover         {"sent": [...]}: those went out; they are handed over no more
    GET  /_link/health

Every route but the proof and health takes the agent's endpoint key (Bearer). Link-Agent and
Link-Agent-Id select the agent; one this process doesn't run is refused before any model sees it.
A message with a Link-Message-Id already kept in its conversation is not kept again. Every body
is read with a cap (link_plugin.bodies): a message up to 1 MiB, anything else 64 KiB.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from pydantic import BaseModel, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from link_plugin import wire
from link_plugin.bodies import SMALL, CappedBodies
from lnk_harness.addresses import HEALTH_PATH
from lnk_harness.agents import Agent
from lnk_harness.conversation import folder_thread, parse_answer_id
from lnk_harness.events import MessageIn
from lnk_harness.reply import Joined
from lnk_harness.respond import AnswerResponse, error, steered

log = logging.getLogger("lnk_harness.server")

CHAT_PATH = "/v1/chat/completions"
BODY_MAX = 1024 * 1024
"""The largest message body (a message is one new message, never the history)."""


def body_cap(path: str) -> int:
    return BODY_MAX if path == CHAT_PATH else SMALL


class ChatMessage(BaseModel, extra="allow"):
    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str | None:
        if isinstance(self.content, str):
            return self.content
        if self.content is None:
            return None
        parts = [p.get("text") for p in self.content if p.get("type") == "text"]
        if len(parts) != len(self.content):
            return None
        return "".join(str(p) for p in parts)


class ChatRequest(BaseModel, extra="allow"):
    model: str = "link"
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False


class Harness:
    def __init__(self, agents: list[Agent], http: httpx.AsyncClient) -> None:
        self.agents = agents
        self.http = http

    # --- which agent ----------------------------------------------------------------------

    def _named(self, request: Request) -> list[Agent] | Response:
        name = request.headers.get(wire.AGENT)
        ident = request.headers.get(wire.AGENT_ID)
        if name is None and ident is None:
            if len(self.agents) == 1:
                return self.agents
            count = len(self.agents)
            return error(
                400, f"this endpoint answers for {count} agents: name one with {wire.AGENT} and {wire.AGENT_ID}"
            )
        return [a for a in self.agents if (ident is None or a.key.id == ident) and (name is None or a.name == name)]

    def _keyed(self, request: Request) -> Agent | Response:
        """The agent the request names, when it carries that agent's key."""
        named = self._named(request)
        if isinstance(named, Response):
            return named
        given = request.headers.get("authorization", "")
        key = given[7:] if given[:7].lower() == "bearer " else ""
        holder = next((a for a in named if a.holds(key)), None)
        if holder is not None:
            return holder
        if key and any(a.holds(key) for a in self.agents):
            return self._unknown(request)
        return error(401, "the endpoint's key is required: Authorization: Bearer <key>", "authentication_error")

    def _unknown(self, request: Request) -> Response:
        name = request.headers.get(wire.AGENT, "?")
        ident = request.headers.get(wire.AGENT_ID, "?")
        return error(404, f"this endpoint runs no agent {name} ({ident})", "not_found_error")

    # --- routes ---------------------------------------------------------------------------

    def _known(self, request: Request) -> list[Agent] | Response:
        """The agents the request names (no key asked), or its refusal when it names none here."""
        named = self._named(request)
        if isinstance(named, Response) or named:
            return named
        return self._unknown(request)

    async def proof(self, request: Request) -> Response:
        named = self._known(request)
        if isinstance(named, Response):
            return named
        if len(named) > 1:
            return error(409, f"{len(named)} agents here have that name and ID; the proof can't tell them apart")
        try:
            challenge = wire.ProofRequest.model_validate_json(await request.body()).challenge
        except ValidationError:
            return error(400, 'the proof takes {"challenge": "<64 hex characters>"}')
        proof = wire.prove(named[0].settings.endpoint_key or "", challenge)
        return JSONResponse(wire.ProofAnswer(proof=proof).model_dump())

    async def health(self, request: Request) -> Response:
        named = self._known(request)
        return named if isinstance(named, Response) else JSONResponse({"ok": True})

    async def models(self, request: Request) -> Response:
        agent = self._keyed(request)
        if isinstance(agent, Response):
            return agent
        listed = [{"id": "link", "object": "model", "created": 0, "owned_by": "lnk"}]
        return JSONResponse({"object": "list", "data": listed})

    async def chat(self, request: Request) -> Response:
        agent = self._keyed(request)
        if isinstance(agent, Response):
            return agent
        try:
            headers = wire.RequestHeaders.parse(request.headers)
        except wire.WireError as exc:
            return error(400, str(exc))
        if headers.thread is None:
            return error(400, f"{wire.THREAD}: <channel>:<chat id> is required: a message belongs to a conversation")
        if headers.sender is not None and headers.sender.hops > agent.settings.hops:
            return error(
                403, f"{wire.HOPS} {headers.sender.hops} is past this agent's cap of {agent.settings.hops}: refused"
            )
        try:
            chat = ChatRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            return error(400, f"not a chat completions request: {exc.errors()[0]['msg']} at {exc.errors()[0]['loc']}")
        last = chat.messages[-1]
        text = last.text() if last.role == "user" else None
        if text is None:
            return error(400, "the last message must be the user's new message, in text (only the new one is sent)")
        conversation = await agent.turns.loaded(headers.thread)
        message = MessageIn(text=text, sender=headers.sender, key=headers.message_id)
        number, new = conversation.keep_message(message)
        if not new:
            kept = conversation.message(number)
            if (kept.text, kept.sender) != (message.text, message.sender):
                return error(
                    409,
                    f"{wire.MESSAGE_ID} {message.key} names another message in this conversation: "
                    "a key is one message's, sent again only with the same text",
                )
        if headers.tools is not None:
            conversation.narrow(headers.tools)
        if new:
            outcome = await agent.turns.arrive(conversation, number)
        else:
            outcome = await agent.turns.again(conversation, number)
        if isinstance(outcome, Joined):
            return steered(outcome, stream=chat.stream, model=chat.model)
        return AnswerResponse(outcome, stream=chat.stream, model=chat.model)

    async def recover(self, request: Request) -> Response:
        agent = self._keyed(request)
        if isinstance(agent, Response):
            return agent
        if request.method == "GET":
            return JSONResponse(wire.RecoverAnswer(answers=self._kept(agent)).model_dump())
        try:
            sent = wire.RecoverConfirm.model_validate_json(await request.body()).sent
        except ValidationError:
            return error(400, 'confirm with {"sent": ["<answer id>", ...]}')
        confirmed, unknown = [], []
        for answer_id in sent:
            parsed = parse_answer_id(answer_id)
            if parsed is not None and agent.turns.conversation(parsed[0]).sent(parsed[1]):
                confirmed.append(answer_id)
            else:
                unknown.append(answer_id)
        return JSONResponse({"sent": confirmed, "unknown": unknown})

    def _kept(self, agent: Agent) -> list[wire.Undelivered]:
        try:
            names = sorted(os.listdir(agent.turns.chats))
        except FileNotFoundError:
            return []
        kept: list[wire.Undelivered] = []
        for name in names:
            thread = folder_thread(name)
            if thread is not None:
                kept += agent.turns.conversation(thread).kept()
        return kept

    # --- the app --------------------------------------------------------------------------

    def app(self) -> CappedBodies:
        @asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            # The MCP client (about a second) and each tool's first listing: not on the first turn's clock.
            listing = [
                asyncio.create_task(agent.turns.toolbox.list_first())
                for agent in self.agents
                if agent.turns.toolbox.addresses
            ]
            for agent in self.agents:
                agent.turns.recover()
            yield
            for task in listing:
                task.cancel()
            await asyncio.gather(*(agent.turns.close() for agent in self.agents))
            await self.http.aclose()

        app = Starlette(
            routes=[
                Route(CHAT_PATH, self.chat, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
                Route(wire.PROOF_PATH, self.proof, methods=["POST"]),
                Route(wire.RECOVER_PATH, self.recover, methods=["GET", "POST"]),
                Route(HEALTH_PATH, self.health, methods=["GET"]),
            ],
            lifespan=lifespan,
        )
        return CappedBodies(app, body_cap)
