"""A local Discord (REST API and Gateway), for tests: the real discord.py talks to it as to Discord.

    with FakeDiscord() as discord:
        os.environ["LNK_DISCORD_API"] = discord.origin
        discord.dm(OWNER, "hello")
        discord.wait(lambda: discord.texts(OWNER.dm))

It follows Discord where a bot can tell. The REST API answers at `/api/v10/...` (`Authorization:
Bot <token>`; 401 for another token): the bot's user and application, `GET /gateway/bot` naming
the Gateway on this server (plain `ws://` on the loopback), messages posted, edited (2,000
characters at most, as Discord's), typing, reactions, and the answers to button presses
(`/interactions/<id>/<token>/callback`). Flood control is Discord's 429: `retry_after` in the
body, `Retry-After` and `X-RateLimit-*` headers, and `Via`, without which discord.py takes a 429
for Cloudflare's ban.

The Gateway speaks Discord's protocol with zlib-stream compression (or none, as the client asks):
HELLO with the heartbeat interval, heartbeats acknowledged, IDENTIFY answered with READY (its
intents kept in `identified`; a wrong token closed with 4004), RESUME answered with the events the
session missed and RESUMED. Every connected session gets each event (Discord sends a bot's events
to all its connections): MESSAGE_CREATE for a direct message (`dm`) or a message in a server's
channel (`guild`, mentioning the bot with `mention`), MESSAGE_UPDATE for an edit,
INTERACTION_CREATE for a button pressed (`press`). `replay` dispatches an event again, as Discord
does to a session resuming from before it; `reconnect` asks every session to connect again.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import uuid
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from lnk_testing.serving import Restartable

TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GlnkTs.lnk-testing-discord-bot-token-000000"
LIMIT = 2000
HEARTBEAT = 41250
"""Milliseconds between heartbeats, as Discord's HELLO says."""
API = "/api/v10"


@dataclass(frozen=True)
class DiscordUser:
    id: int
    name: str

    @property
    def dm(self) -> int:
        """Their direct message channel with the bot."""
        return self.id + 1_000_000

    def json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "username": self.name,
            "global_name": self.name.title(),
            "discriminator": "0",
            "avatar": None,
        }


@dataclass
class Sent:
    """A message the bot sent, with every text it held and when."""

    channel: int
    id: int
    history: list[tuple[float, str]]
    reply_to: int | None = None
    components: list[dict[str, Any]] = field(default_factory=list)
    reactions: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.history[-1][1]

    @property
    def buttons(self) -> list[str]:
        return [c["label"] for row in self.components for c in row.get("components", [])]


@dataclass
class Call:
    method: str
    path: str
    body: dict[str, Any]
    at: float
    status: int = 200


@dataclass
class _Session:
    id: str
    socket: WebSocket
    loop: asyncio.AbstractEventLoop
    compressor: Any
    sequence: int = 0
    sent: list[dict[str, Any]] = field(default_factory=list)
    """Every dispatch, for a resume."""
    identified: bool = False


class _ApiError(Exception):
    def __init__(self, status: int, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


def _now() -> str:
    return datetime.now(UTC).isoformat()


class FakeDiscord(Restartable):
    def __init__(self, token: str = TOKEN, *, bot_id: int = 424242424242424242, port: int = 0) -> None:
        self.token = token
        self.bot = DiscordUser(bot_id, "lnk_test_bot")
        self.application_id = bot_id
        self.calls: list[Call] = []
        self.sent: list[Sent] = []
        self.typing: list[int] = []
        """Channels the bot showed typing in, once a call."""
        self.identified: list[int] = []
        """The intents of each IDENTIFY."""
        self.resumed = 0
        self.responses: dict[int, dict[str, Any]] = {}
        """Answers to button presses, by interaction id."""
        self._events: list[tuple[str, dict[str, Any]]] = []
        self._sessions: dict[str, _Session] = {}
        self._closed_sessions: dict[str, _Session] = {}
        self._ids = itertools.count(900_000_000_000_000_001)
        self._troubles: list[tuple[str, str, float | None]] = []
        """Calls to trouble, in order: (method, path's end, 429's retry_after or None for a 502)."""
        self._reactions: dict[tuple[int, int], list[str]] = {}
        self._dms: set[int] = set()
        """Direct message channels."""
        self._losses: list[tuple[str, str, float]] = []
        self._lock = threading.Lock()
        super().__init__(port)

    # -- serving -------------------------------------------------------------------------------

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route(API + "/{path:path}", self._api, methods=["GET", "POST", "PATCH", "PUT", "DELETE"]),
                WebSocketRoute("/gateway", self._gateway),
            ],
            lifespan=self._lifespan,
        )

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        for session in list(self._sessions.values()):
            with suppress(Exception):
                await session.socket.close(1001)

    @property
    def origin(self) -> str:
        """What `LNK_DISCORD_API` takes: the REST API is under `/api/v10`, the Gateway at `/gateway`."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeDiscord:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what tests inject ---------------------------------------------------------------------

    def _message(
        self, channel: int, user: DiscordUser, text: str, guild: int | None, mentions: list[DiscordUser]
    ) -> dict[str, Any]:
        message: dict[str, Any] = {
            "id": str(next(self._ids)),
            "channel_id": str(channel),
            "author": user.json(),
            "content": text,
            "timestamp": _now(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [m.json() for m in mentions],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
        }
        if guild is not None:
            message["guild_id"] = str(guild)
        return message

    def dm(self, user: DiscordUser, text: str, *, attachment: bool = False, reply_to: int | None = None) -> int:
        """A message from `user` in their direct message with the bot (replying to the bot's message
        `reply_to`); its id."""
        with self._lock:
            self._dms.add(user.dm)
        message = self._message(user.dm, user, text, None, [])
        if reply_to is not None:
            message["type"] = 19
            message["message_reference"] = {"message_id": str(reply_to), "channel_id": str(user.dm)}
        if attachment:
            url = f"http://127.0.0.1:{self.port}/attachments/photo.png"
            photo = {"id": str(next(self._ids)), "filename": "photo.png", "size": 1, "url": url, "proxy_url": url}
            message["attachments"] = [photo]
        self.dispatch("MESSAGE_CREATE", message)
        return int(message["id"])

    def guild(
        self, channel: int, user: DiscordUser, text: str, *, mention: bool = False, reply_to: int | None = None
    ) -> int:
        """A message in a server's channel; `mention` puts `<@bot>` in front (Discord lists it in
        `mentions`), `reply_to` replies to the bot's message (a reply mentions its author unless the
        replier turns that off, as this one does)."""
        if mention:
            text = f"<@{self.bot.id}> {text}"
        message = self._message(channel, user, text, 777, [self.bot] if mention else [])
        if reply_to is not None:
            message["type"] = 19
            message["message_reference"] = {"message_id": str(reply_to), "channel_id": str(channel), "guild_id": "777"}
        self.dispatch("MESSAGE_CREATE", message)
        return int(message["id"])

    def edit(self, user: DiscordUser, message_id: int, text: str) -> None:
        """`user` edits their direct message."""
        message = self._message(user.dm, user, text, None, [])
        message["id"] = str(message_id)
        message["edited_timestamp"] = _now()
        self.dispatch("MESSAGE_UPDATE", message)

    def press(self, user: DiscordUser, sent: Sent, custom_id: str) -> int:
        """`user` presses the button `custom_id` under the bot's message; the interaction's id."""
        if custom_id not in [c["custom_id"] for row in sent.components for c in row.get("components", [])]:
            raise AssertionError(f"message {sent.id} shows no button {custom_id!r}")
        interaction = next(self._ids)
        with self._lock:
            direct = sent.channel in self._dms
        payload: dict[str, Any] = {
            "id": str(interaction),
            "application_id": str(self.application_id),
            "type": 3,
            "data": {"custom_id": custom_id, "component_type": 2},
            "channel_id": str(sent.channel),
            "channel": {"id": str(sent.channel), "type": 1 if direct else 0},
            "message": self._sent_json(sent),
            "token": f"interaction-token-{interaction}",
            "version": 1,
            "attachment_size_limit": 10_485_760,
            "locale": "en-US",
            "app_permissions": "0",
            "entitlements": [],
            "context": 1 if direct else 0,
        }
        if direct:
            payload["user"] = user.json()
        else:
            payload["guild_id"] = "777"
            payload["member"] = {"user": user.json(), "roles": [], "joined_at": _now(), "deaf": False, "mute": False}
        self.dispatch("INTERACTION_CREATE", payload)
        return interaction

    def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """An event to every identified session."""
        with self._lock:
            self._events.append((event, data))
            sessions = [s for s in self._sessions.values() if s.identified]
        if not sessions:
            raise AssertionError("no Gateway session is connected to hand the event to")
        for session in sessions:
            asyncio.run_coroutine_threadsafe(self._dispatch(session, event, data), session.loop).result(5)

    def replay(self, message_id: int) -> None:
        """Dispatch the event of a message again, as Discord does to a session resuming from before it."""
        with self._lock:
            event, data = next((e, d) for e, d in self._events if d.get("id") == str(message_id))
        self.dispatch(event, data)

    def reconnect(self) -> None:
        """Discord asks every session to connect again (op 7 RECONNECT); they resume."""
        for session in list(self._sessions.values()):
            asyncio.run_coroutine_threadsafe(self._send(session, {"op": 7, "d": None}), session.loop).result(5)

    # -- what tests read -----------------------------------------------------------------------

    @property
    def connections(self) -> int:
        with self._lock:
            return len([s for s in self._sessions.values() if s.identified])

    def messages(self, channel: int) -> list[Sent]:
        with self._lock:
            return [s for s in self.sent if s.channel == channel]

    def texts(self, channel: int) -> list[str]:
        return [s.text for s in self.messages(channel)]

    def called(self, method: str, path: str) -> list[Call]:
        """Calls of `method` whose path ends with `path` (e.g. "POST", "/messages")."""
        with self._lock:
            return [c for c in self.calls if c.method == method and c.path.endswith(path)]

    def wait(self, condition: Callable[[], object], timeout: float = 20.0) -> None:
        """Poll `condition` every 20 ms; fail the test when it isn't true within `timeout`."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                with self._lock:
                    shown = {s.id: s.text for s in self.sent}
                raise AssertionError(f"not within {timeout} s; the bot sent: {shown}")
            time.sleep(0.02)

    # -- trouble on demand ---------------------------------------------------------------------

    def flood(self, method: str, path: str, retry_after: float = 1, times: int = 1) -> None:
        """The next `times` calls of `method` on a path ending with `path` get 429 with `retry_after`."""
        with self._lock:
            self._troubles += [(method, path, retry_after)] * times

    def fail(self, method: str, path: str, times: int = 1) -> None:
        """The next `times` such calls get 502 Bad Gateway and don't land."""
        with self._lock:
            self._troubles += [(method, path, None)] * times

    def lose(self, method: str, path: str, delay: float, times: int = 1) -> None:
        """The next `times` such calls land, but their answers come `delay` seconds late."""
        with self._lock:
            self._losses += [(method, path, delay)] * times

    def _late(self, method: str, path: str) -> float | None:
        with self._lock:
            for index, (m, end, delay) in enumerate(self._losses):
                if m == method and path.endswith(end):
                    del self._losses[index]
                    return delay
        return None

    def _trouble(self, method: str, path: str) -> tuple[bool, float | None]:
        """Whether this call is in trouble, and how (a 429's retry_after, or None for a 502)."""
        with self._lock:
            for index, (m, end, retry_after) in enumerate(self._troubles):
                if m == method and path.endswith(end):
                    del self._troubles[index]
                    return True, retry_after
        return False, None

    # -- the Gateway ---------------------------------------------------------------------------

    async def _send(self, session: _Session, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        if session.compressor is None:
            await session.socket.send_text(data.decode())
        else:
            await session.socket.send_bytes(
                session.compressor.compress(data) + session.compressor.flush(zlib.Z_SYNC_FLUSH)
            )

    async def _dispatch(self, session: _Session, event: str, data: dict[str, Any]) -> None:
        session.sequence += 1
        payload = {"op": 0, "t": event, "s": session.sequence, "d": data}
        session.sent.append(payload)
        await self._send(session, payload)

    async def _gateway(self, socket: WebSocket) -> None:
        compress = socket.query_params.get("compress")
        if compress not in (None, "zlib-stream"):
            await socket.close(4000)
            raise AssertionError(f"the fake Gateway speaks zlib-stream or no compression, not {compress}")
        await socket.accept()
        session = _Session(
            uuid.uuid4().hex, socket, asyncio.get_running_loop(), zlib.compressobj() if compress else None
        )
        await self._send(session, {"op": 10, "d": {"heartbeat_interval": HEARTBEAT}})
        try:
            while True:
                message = json.loads(await socket.receive_text())
                op, data = message.get("op"), message.get("d")
                if op == 1:
                    await self._send(session, {"op": 11, "d": None})
                elif op == 2:
                    await self._identify(session, data)
                elif op == 6:
                    await self._resume(session, data)
        except (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            with self._lock:
                if self._sessions.get(session.id) is session:
                    del self._sessions[session.id]
                    self._closed_sessions[session.id] = session

    async def _identify(self, session: _Session, data: dict[str, Any]) -> None:
        if data.get("token") != self.token:
            await session.socket.close(4004, "Authentication failed.")
            return
        with self._lock:
            self.identified.append(int(data.get("intents", 0)))
            session.identified = True
            self._sessions[session.id] = session
        ready = {
            "v": 10,
            "user": {**self.bot.json(), "bot": True},
            "guilds": [],
            "session_id": session.id,
            "resume_gateway_url": f"ws://127.0.0.1:{self.port}/gateway",
            "application": {"id": str(self.application_id), "flags": 0},
        }
        await self._dispatch(session, "READY", ready)

    async def _resume(self, session: _Session, data: dict[str, Any]) -> None:
        with self._lock:
            old = self._closed_sessions.pop(str(data.get("session_id")), None)
        if old is None or data.get("token") != self.token:
            await self._send(session, {"op": 9, "d": False})
            return
        with self._lock:
            session.id, session.sequence, session.sent, session.identified = old.id, old.sequence, old.sent, True
            self._sessions[session.id] = session
            self.resumed += 1
        missed = [p for p in old.sent if p["s"] > int(data.get("seq") or 0)]
        for payload in missed:
            await self._send(session, payload)
        await self._dispatch(session, "RESUMED", {})

    # -- the REST API --------------------------------------------------------------------------

    async def _api(self, request: Request) -> Response:
        path = "/" + request.path_params["path"]
        body: dict[str, Any] = {}
        if request.method in ("POST", "PATCH", "PUT") and await request.body():
            body = await request.json()
        call = Call(request.method, path, body, time.monotonic())
        with self._lock:
            self.calls.append(call)
        troubled, retry_after = self._trouble(request.method, path)
        if troubled and retry_after is not None:
            call.status = 429
            headers = {
                "Retry-After": f"{retry_after:g}",
                "X-RateLimit-Limit": "5",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset-After": f"{retry_after:g}",
                "X-RateLimit-Bucket": "lnk-testing-bucket",
                "X-RateLimit-Scope": "user",
                "Via": "1.1 google",
            }
            body_429 = {"message": "You are being rate limited.", "retry_after": retry_after, "global": False}
            return JSONResponse(body_429, status_code=429, headers=headers)
        if troubled:
            call.status = 502
            return Response("<html><body>502 Bad Gateway</body></html>", status_code=502, media_type="text/html")
        try:
            if not path.startswith("/interactions/") and request.headers.get("authorization") != f"Bot {self.token}":
                raise _ApiError(401, "401: Unauthorized")
            result = await self._route(request.method, path, body)
        except _ApiError as exc:
            call.status = exc.status
            return JSONResponse({"message": exc.message, "code": exc.code}, status_code=exc.status)
        late = self._late(request.method, path)
        if late is not None:
            await asyncio.sleep(late)
        if result is None:
            call.status = 204
            return Response(status_code=204)
        return JSONResponse(result)

    async def _route(self, method: str, path: str, body: dict[str, Any]) -> Any:
        parts = path.strip("/").split("/")
        if (method, path) == ("GET", "/users/@me"):
            return {**self.bot.json(), "bot": True, "verified": True, "flags": 0}
        if (method, path) == ("GET", "/oauth2/applications/@me"):
            return self._application()
        if (method, path) == ("GET", "/gateway/bot"):
            limit = {"total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1}
            return {"url": f"ws://127.0.0.1:{self.port}/gateway", "shards": 1, "session_start_limit": limit}
        if method == "POST" and parts[0] == "channels" and parts[2:] == ["messages"]:
            return self._post(int(parts[1]), body)
        if method == "PATCH" and parts[0] == "channels" and parts[2] == "messages":
            return self._patch(int(parts[1]), int(parts[3]), body)
        if method == "POST" and parts[0] == "channels" and parts[2:] == ["typing"]:
            with self._lock:
                self.typing.append(int(parts[1]))
            return None
        if method == "PUT" and parts[0] == "channels" and parts[2] == "messages" and parts[4] == "reactions":
            with self._lock:
                sent = self._find(int(parts[1]), int(parts[3]))
                if sent is not None:
                    sent.reactions.append(parts[5])
                else:
                    self._reactions.setdefault((int(parts[1]), int(parts[3])), []).append(parts[5])
            return None
        if method == "POST" and parts[0] == "interactions" and parts[3:] == ["callback"]:
            with self._lock:
                self.responses[int(parts[1])] = body
            message = {
                "id": str(next(self._ids)),
                "channel_id": "0",
                "content": body.get("data", {}).get("content", ""),
            }
            interaction = {
                "id": parts[1],
                "type": 3,
                "response_message_id": message["id"],
                "response_message_loading": False,
                "response_message_ephemeral": bool(body.get("data", {}).get("flags", 0) & 64),
            }
            shown = self._bot_message(int(message["id"]), 0, message["content"])
            return {"interaction": interaction, "resource": {"type": body.get("type", 4), "message": shown}}
        raise _ApiError(404, "404: Not Found", 0)

    def reactions(self, channel: int, message_id: int) -> list[str]:
        """The bot's reactions on someone's message."""
        with self._lock:
            return list(self._reactions.get((channel, message_id), []))

    def _application(self) -> dict[str, Any]:
        return {
            "id": str(self.application_id),
            "name": "Lnk Test",
            "description": "",
            "icon": None,
            "bot_public": False,
            "bot_require_code_grant": False,
            "owner": DiscordUser(1, "owner").json(),
            "verify_key": "0" * 64,
            "flags": 0,
        }

    def _text(self, body: dict[str, Any]) -> str:
        text = str(body.get("content") or "")
        if not text.strip() and not body.get("components"):
            raise _ApiError(400, "Cannot send an empty message", 50006)
        if len(text) > LIMIT:
            raise _ApiError(400, "Invalid Form Body: content: Must be 2000 or fewer in length.", 50035)
        return text

    def _post(self, channel: int, body: dict[str, Any]) -> dict[str, Any]:
        text = self._text(body)
        reference = (body.get("message_reference") or {}).get("message_id")
        with self._lock:
            sent = Sent(channel, next(self._ids), [(time.monotonic(), text)], int(reference) if reference else None)
            sent.components = list(body.get("components") or [])
            self.sent.append(sent)
            return self._sent_json(sent)

    def _patch(self, channel: int, message_id: int, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            sent = self._find(channel, message_id)
            if sent is None:
                raise _ApiError(404, "Unknown Message", 10008)
            if "content" in body:
                text = self._text(body)
                if text != sent.text:
                    sent.history.append((time.monotonic(), text))
            if "components" in body:
                sent.components = list(body["components"] or [])
            return self._sent_json(sent)

    def _find(self, channel: int, message_id: int) -> Sent | None:
        return next((s for s in self.sent if (s.channel, s.id) == (channel, message_id)), None)

    def _bot_message(self, message_id: int, channel: int, text: str) -> dict[str, Any]:
        return {
            **self._message(channel, self.bot, text, None, []),
            "id": str(message_id),
            "author": {**self.bot.json(), "bot": True},
        }

    def _sent_json(self, sent: Sent) -> dict[str, Any]:
        message = self._bot_message(sent.id, sent.channel, sent.text)
        message["components"] = sent.components
        if len(sent.history) > 1:
            message["edited_timestamp"] = _now()
        if sent.reply_to is not None:
            message["type"] = 19
            message["message_reference"] = {"message_id": str(sent.reply_to), "channel_id": str(sent.channel)}
        return message
