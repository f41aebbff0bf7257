"""A local Slack (Web API and Socket Mode), for tests: the real slack-sdk talks to it as to Slack.

    with FakeSlack() as slack:
        os.environ["LNK_SLACK_API"] = slack.api     # AsyncWebClient(base_url=...)
        slack.dm(OWNER, "hello")
        slack.wait(lambda: slack.texts(slack.dm_channel(OWNER)))

It follows Slack where a bridge can tell. The Web API answers `POST /api/<method>` (parameters in
the query, a form or JSON; the token as `Authorization: Bearer` or a `token` parameter) with
`{"ok": true, ...}` or `{"ok": false, "error": ...}`; flood control is a 429 with `Retry-After`.
`apps.connections.open` takes the app-level token (`xapp-`) and answers the URL of a Socket Mode
WebSocket on this server (plain `ws://` on the loopback), which says `hello` (with
`num_connections` and `connection_info.app_id`) and then sends envelopes: `events_api` for the
app's events (`message` in a direct message, `app_mention` in a channel, as Link's manifest
subscribes; `message` in a channel too with `subscribe("message.channels")`) and `interactive`
for a button pressed (`block_actions`). Each envelope waits for its acknowledgement (`acked`);
`resend` hands an envelope over again, as Slack does when it missed one, and with several
connections each envelope goes to one of them, as Slack shares an app's events.

Tests inject messages (`dm`, `channel`, `press`), read what the bot did (`posted`, with every
edit and its time, `reactions`) and turn on trouble: `flood` (429 with `Retry-After`), `fail`
(502 before the call lands), `lose` (the call lands, its answer comes late), `disconnect` (Slack
asks the client to connect again).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from lnk_testing.serving import Restartable
from lnk_testing.trouble import Trouble

APP_TOKEN = "xapp-1-A0LNKTEST-1234567890-abcdef0123456789abcdef0123456789abcdef0123456789abcdef012345678"
BOT_TOKEN = "xoxb-1234567890-1234567890123-lnkTestingBotToken0123"
TOO_LONG = 40_000
"""Slack refuses a message past 40,000 characters (and recommends 4,000)."""


@dataclass(frozen=True)
class SlackUser:
    id: str
    name: str

    @property
    def dm(self) -> str:
        """Their direct message channel with the bot."""
        return "D" + self.id[1:]


@dataclass
class Posted:
    """A message the bot posted, with every text it held and when."""

    channel: str
    ts: str
    history: list[tuple[float, str]]
    thread_ts: str | None = None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    seen: bool = False
    """On the screen: from the moment Slack answered the call that posted it (a person can't press
    a button the bot hasn't heard it posted yet)."""

    @property
    def text(self) -> str:
        return self.history[-1][1]

    @property
    def buttons(self) -> list[str]:
        """The labels of the buttons it shows now."""
        return [
            element["text"]["text"]
            for block in self.blocks
            if block.get("type") == "actions"
            for element in block.get("elements", [])
        ]


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float
    status: int = 200
    error: str | None = None


@dataclass
class Envelope:
    id: str
    kind: str
    payload: dict[str, Any]
    sent: float
    retry_attempt: int = 0

    def json(self) -> str:
        return json.dumps(
            {
                "envelope_id": self.id,
                "type": self.kind,
                "payload": self.payload,
                "accepts_response_payload": False,
                "retry_attempt": self.retry_attempt,
                "retry_reason": "timeout" if self.retry_attempt else "",
            }
        )


class _ApiError(Exception):
    def __init__(self, error: str, status: int = 200) -> None:
        super().__init__(error)
        self.error = error
        self.status = status


class FakeSlack(Restartable, Trouble):
    def __init__(
        self,
        *,
        app_token: str = APP_TOKEN,
        bot_token: str = BOT_TOKEN,
        app_id: str = "A0LNKTEST",
        bot_user: str = "U0LNKBOT",
        port: int = 0,
    ) -> None:
        self.app_token = app_token
        self.bot_token = bot_token
        self.app_id = app_id
        self.bot_user = bot_user
        self.bot_id = "B0LNKBOT"
        self.team_id = "T0LNKTEST"
        self.calls: list[Call] = []
        self.posted: list[Posted] = []
        self.acked: dict[str, float] = {}
        """Envelope ids acknowledged, and when."""
        self.envelopes: list[Envelope] = []
        self.subscribed = {"message.im", "app_mention"}
        """The app's event subscriptions: Link's manifest's."""
        self._reactions: dict[tuple[str, str], list[str]] = {}
        self._channels: set[str] = set()
        """Channels the bot is in (direct messages with people who wrote to it, channels it was added to)."""
        self._clock = itertools.count(1)
        self._sockets: list[tuple[WebSocket, asyncio.AbstractEventLoop]] = []
        self._turn = itertools.count()
        self._echoing: set[asyncio.Task[None]] = set()
        self._lock = threading.Lock()
        Restartable.__init__(self, port)
        Trouble.__init__(self)

    # -- serving -------------------------------------------------------------------------------

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/api/{method}", self._api, methods=["GET", "POST"]),
                WebSocketRoute("/link/", self._socket),
            ],
            lifespan=self._lifespan,
        )

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        for socket, _ in list(self._sockets):
            await socket.close(1001)

    @property
    def api(self) -> str:
        """The Web API's base URL, as slack-sdk's `base_url` takes it."""
        return f"http://127.0.0.1:{self.port}/api/"

    def __enter__(self) -> FakeSlack:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what tests inject ---------------------------------------------------------------------

    def _ts(self) -> str:
        return f"{int(time.time())}.{next(self._clock):06d}"

    def meet(self, user: SlackUser) -> None:
        """`user` has a direct message with the bot already, so the bot may write there first."""
        with self._lock:
            self._channels.add(user.dm)

    def dm(self, user: SlackUser, text: str | None, *, files: bool = False, thread_ts: str | None = None) -> str:
        """A message from `user` in their direct message with the bot (in the thread of `thread_ts`);
        its ts. `text=None` with `files`: a file shared with no text."""
        with self._lock:
            self._channels.add(user.dm)
        ts = self._ts()
        event: dict[str, Any] = {
            "type": "message",
            "channel": user.dm,
            "channel_type": "im",
            "user": user.id,
            "text": text or "",
            "ts": ts,
            "event_ts": ts,
            "client_msg_id": str(uuid.uuid4()),
        }
        if thread_ts is not None:
            event["thread_ts"] = thread_ts
        if files:
            event["subtype"] = "file_share"
            event["files"] = [{"id": "F0LNK", "name": "photo.png", "mimetype": "image/png"}]
        self.event(event)
        return ts

    def edit(self, user: SlackUser, ts: str, text: str) -> None:
        """`user` edits their direct message `ts`: Slack's `message_changed`."""
        now = self._ts()
        message = {"type": "message", "user": user.id, "text": text, "ts": ts, "edited": {"user": user.id, "ts": now}}
        self.event(
            {
                "type": "message",
                "subtype": "message_changed",
                "channel": user.dm,
                "channel_type": "im",
                "hidden": True,
                "message": message,
                "previous_message": {**message, "text": "(before)"},
                "ts": now,
                "event_ts": now,
            }
        )

    def channel(
        self, channel: str, user: SlackUser, text: str, *, mention: bool = False, thread_ts: str | None = None
    ) -> str:
        """A message in a channel the bot is in; `mention` puts `<@bot>` in front, and Slack sends it
        as `app_mention`. A message without one reaches the app only when it subscribed to
        `message.channels`; with both, Slack sends one message as two events."""
        with self._lock:
            self._channels.add(channel)
        if mention:
            text = f"<@{self.bot_user}> {text}"
        ts = self._ts()
        event: dict[str, Any] = {"channel": channel, "user": user.id, "text": text, "ts": ts, "event_ts": ts}
        if thread_ts is not None:
            event["thread_ts"] = thread_ts
        if mention and "app_mention" in self.subscribed:
            self.event({"type": "app_mention", **event})
        if "message.channels" in self.subscribed:
            self.event({"type": "message", "channel_type": "channel", "client_msg_id": str(uuid.uuid4()), **event})
        return ts

    def press(self, user: SlackUser, posted: Posted, value: str) -> str:
        """`user` presses the button with `value` under the bot's message; the envelope's id."""
        with self._lock:
            action = next(
                (e for b in posted.blocks if b.get("type") == "actions" for e in b["elements"] if e["value"] == value),
                None,
            )
        if action is None:
            raise AssertionError(f"message {posted.ts} shows no button with {value!r}")
        payload = {
            "type": "block_actions",
            "team": {"id": self.team_id},
            "user": {"id": user.id, "username": user.name, "team_id": self.team_id},
            "api_app_id": self.app_id,
            "container": {"type": "message", "message_ts": posted.ts, "channel_id": posted.channel},
            "channel": {"id": posted.channel},
            "message": {"ts": posted.ts, "text": posted.text, "blocks": posted.blocks},
            "actions": [{**action, "block_id": "question", "action_ts": self._ts()}],
            "trigger_id": uuid.uuid4().hex,
            "response_url": f"http://127.0.0.1:{self.port}/actions/{uuid.uuid4().hex}",
        }
        return self._send(Envelope(str(uuid.uuid4()), "interactive", payload, time.monotonic()))

    def event(self, event: dict[str, Any]) -> str:
        """Hand the app an event; its envelope's id."""
        payload = {
            "token": "verification-token",
            "team_id": self.team_id,
            "api_app_id": self.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{uuid.uuid4().hex[:10].upper()}",
            "event_time": int(time.time()),
            "authorizations": [{"team_id": self.team_id, "user_id": self.bot_user, "is_bot": True}],
        }
        return self._send(Envelope(str(uuid.uuid4()), "events_api", payload, time.monotonic()))

    def resend(self, envelope_id: str) -> str:
        """Hand an envelope's event over again, as Slack does when it missed the acknowledgement:
        the same event, a new envelope, `retry_attempt` counted up."""
        with self._lock:
            first = next(e for e in self.envelopes if e.id == envelope_id)
        again = Envelope(str(uuid.uuid4()), first.kind, first.payload, time.monotonic(), first.retry_attempt + 1)
        return self._send(again)

    def _send(self, envelope: Envelope) -> str:
        socket, loop = self._next(envelope)
        asyncio.run_coroutine_threadsafe(socket.send_text(envelope.json()), loop).result(5)
        return envelope.id

    def _next(self, envelope: Envelope) -> tuple[WebSocket, asyncio.AbstractEventLoop]:
        """The connection the envelope goes to: one of the app's, in turn."""
        with self._lock:
            self.envelopes.append(envelope)
            live = list(self._sockets)
        if not live:
            raise AssertionError("no Socket Mode connection is open to hand the event to")
        return live[next(self._turn) % len(live)]

    def _echo(self, event: dict[str, Any]) -> None:
        """What the bot itself does in a direct message comes back to the app as an event, as on
        Slack: soon after the call's answer."""
        if "message.im" not in self.subscribed or not event["channel"].startswith("D"):
            return
        payload = {"type": "event_callback", "api_app_id": self.app_id, "team_id": self.team_id, "event": event}
        with self._lock:
            if not self._sockets:
                return
        envelope = Envelope(str(uuid.uuid4()), "events_api", payload, time.monotonic())
        socket, _ = self._next(envelope)
        sending = asyncio.get_running_loop().create_task(socket.send_text(envelope.json()))
        self._echoing.add(sending)
        sending.add_done_callback(self._echoing.discard)

    def disconnect(self, reason: str = "refresh_requested") -> None:
        """Slack asks every connection to connect again (`type: disconnect`), then closes it. None
        of them is counted or handed an event from here on, even before its close has gone through."""
        with self._lock:
            closing = list(self._sockets)
            self._sockets.clear()
        for socket, loop in closing:
            message = {"type": "disconnect", "reason": reason, "debug_info": {"host": "lnk-testing"}}
            asyncio.run_coroutine_threadsafe(socket.send_text(json.dumps(message)), loop).result(5)
            asyncio.run_coroutine_threadsafe(socket.close(1000), loop).result(5)

    def subscribe(self, event: str) -> None:
        self.subscribed.add(event)

    # -- what tests read -----------------------------------------------------------------------

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._sockets)

    def messages(self, channel: str) -> list[Posted]:
        """What the bot posted in a channel, in order."""
        with self._lock:
            return [p for p in self.posted if p.channel == channel and p.seen]

    def texts(self, channel: str) -> list[str]:
        return [p.text for p in self.messages(channel)]

    def called(self, method: str) -> list[Call]:
        with self._lock:
            return [call for call in self.calls if call.method == method]

    def reactions(self, channel: str, ts: str) -> list[str]:
        """The bot's reactions on a message now."""
        with self._lock:
            return list(self._reactions.get((channel, ts), []))

    def was_acked(self, envelope_id: str) -> bool:
        with self._lock:
            return envelope_id in self.acked

    def wait(self, condition: Callable[[], object], timeout: float = 20.0) -> None:
        """Poll `condition` every 20 ms; fail the test when it isn't true within `timeout`."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                with self._lock:
                    shown = {p.channel + "/" + p.ts: p.text for p in self.posted}
                raise AssertionError(f"not within {timeout} s; the bot posted: {shown}")
            time.sleep(0.02)

    # -- Socket Mode ---------------------------------------------------------------------------

    async def _socket(self, socket: WebSocket) -> None:
        await socket.accept()
        entry = (socket, asyncio.get_running_loop())
        with self._lock:
            self._sockets.append(entry)
            count = len(self._sockets)
        hello = {
            "type": "hello",
            "num_connections": count,
            "debug_info": {"host": "lnk-testing", "approximate_connection_time": 18060},
            "connection_info": {"app_id": self.app_id},
        }
        try:
            await socket.send_text(json.dumps(hello))
            while True:
                message = json.loads(await socket.receive_text())
                if "envelope_id" in message:
                    with self._lock:
                        self.acked.setdefault(message["envelope_id"], time.monotonic())
        except (WebSocketDisconnect, RuntimeError):
            pass
        finally:
            with self._lock:
                if entry in self._sockets:
                    self._sockets.remove(entry)

    # -- the Web API ---------------------------------------------------------------------------

    async def _api(self, request: Request) -> Response:
        method = request.path_params["method"]
        params = await self._params(request)
        call = Call(method, params, time.monotonic())
        with self._lock:
            self.calls.append(call)
        struck = self.strike(method)
        token = params.pop("token", None) or request.headers.get("authorization", "").removeprefix("Bearer ")
        try:
            if struck.retry_after is not None:
                call.status = 429
                body = {"ok": False, "error": "ratelimited"}
                return JSONResponse(body, status_code=429, headers={"Retry-After": f"{struck.retry_after:g}"})
            if struck.failing:
                call.status = 502
                return Response("<html><body>502 Bad Gateway</body></html>", status_code=502, media_type="text/html")
            handler = getattr(self, "_" + method.replace(".", "_"), None)
            if handler is None:
                raise _ApiError("unknown_method", 404)
            result = await handler(params, token)
        except _ApiError as exc:
            call.status, call.error = exc.status, exc.error
            return JSONResponse({"ok": False, "error": exc.error}, status_code=exc.status)
        if struck.late is not None:
            self._seen()  # it landed, and shows; only the bot hears so late
            await asyncio.sleep(struck.late)
        return JSONResponse({"ok": True, **result}, background=BackgroundTask(self._seen))

    def _seen(self) -> None:
        with self._lock:
            for posted in self.posted:
                posted.seen = True

    @staticmethod
    async def _params(request: Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query_params)
        if request.method == "POST":
            if request.headers.get("content-type", "").startswith("application/json"):
                params.update(await request.json())
            else:
                params.update((await request.form()).items())
        for name in ("blocks",):
            if isinstance(params.get(name), str):
                params[name] = json.loads(params[name])
        return params

    def _bot(self, token: str) -> None:
        if token == self.app_token:
            raise _ApiError("not_allowed_token_type")
        if token != self.bot_token:
            raise _ApiError("invalid_auth")

    async def _auth_test(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        self._bot(token)
        return {
            "url": "https://lnk-testing.slack.com/",
            "team": "Lnk Testing",
            "user": "link",
            "team_id": self.team_id,
            "user_id": self.bot_user,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    async def _apps_connections_open(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        if token == self.bot_token:
            raise _ApiError("not_allowed_token_type")
        if token != self.app_token:
            raise _ApiError("invalid_auth")
        return {"url": f"ws://127.0.0.1:{self.port}/link/?ticket={uuid.uuid4()}&app_id={self.app_id}"}

    def _text(self, params: dict[str, Any]) -> str:
        text = str(params.get("text") or "")
        if not text.strip() and not params.get("blocks"):
            raise _ApiError("no_text")
        if len(text) > TOO_LONG:
            raise _ApiError("msg_too_long")
        return text

    async def _chat_postMessage(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        self._bot(token)
        channel = str(params.get("channel", ""))
        text = self._text(params)
        with self._lock:
            if channel not in self._channels:
                raise _ApiError("channel_not_found")
            posted = Posted(channel, self._ts(), [(time.monotonic(), text)], params.get("thread_ts"))
            posted.blocks = list(params.get("blocks") or [])
            self.posted.append(posted)
        message = self._message(posted)
        self._echo({**message, "channel": channel, "channel_type": "im", "event_ts": posted.ts})
        return {"channel": channel, "ts": posted.ts, "message": message}

    async def _chat_update(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        self._bot(token)
        text = self._text(params)
        with self._lock:
            posted = next(
                (p for p in self.posted if (p.channel, p.ts) == (params.get("channel"), params.get("ts"))), None
            )
            if posted is None:
                raise _ApiError("message_not_found")
            if "blocks" in params:
                posted.blocks = list(params["blocks"] or [])
            if posted.text != text:
                posted.history.append((time.monotonic(), text))
        message = self._message(posted)
        now = self._ts()
        changed = {"type": "message", "subtype": "message_changed", "channel": posted.channel, "hidden": True}
        self._echo({**changed, "channel_type": "im", "message": message, "ts": now, "event_ts": now})
        return {"channel": posted.channel, "ts": posted.ts, "text": text, "message": message}

    async def _reactions_add(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        self._bot(token)
        key = (str(params.get("channel")), str(params.get("timestamp")))
        with self._lock:
            if key[0] not in self._channels:
                raise _ApiError("channel_not_found")
            names = self._reactions.setdefault(key, [])
            if params["name"] in names:
                raise _ApiError("already_reacted")
            names.append(str(params["name"]))
        return {}

    async def _reactions_remove(self, params: dict[str, Any], token: str) -> dict[str, Any]:
        self._bot(token)
        key = (str(params.get("channel")), str(params.get("timestamp")))
        with self._lock:
            names = self._reactions.get(key, [])
            if params["name"] not in names:
                raise _ApiError("no_reaction")
            names.remove(str(params["name"]))
        return {}

    def _message(self, posted: Posted) -> dict[str, Any]:
        message: dict[str, Any] = {
            "type": "message",
            "user": self.bot_user,
            "bot_id": self.bot_id,
            "text": posted.text,
            "ts": posted.ts,
        }
        if posted.blocks:
            message["blocks"] = posted.blocks
        if posted.thread_ts:
            message["thread_ts"] = posted.thread_ts
        return message
