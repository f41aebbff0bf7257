"""A local Telegram Bot API, for tests: the real python-telegram-bot client talks to it as to Telegram.

    with FakeTelegram() as telegram:
        os.environ["LNK_TELEGRAM_API"] = telegram.origin
        telegram.private(OWNER, "hello")
        telegram.wait(lambda: telegram.messages(OWNER.id))

It follows the Bot API where a bridge can tell: requests at `/bot<token>/<method>` as form fields
or JSON, answers `{"ok", "result"}` or `{"ok": false, "error_code", "description", "parameters"}`,
`getUpdates` held open until an update comes or `timeout` passes, `offset` confirming what came
before it (a negative one keeping the last few), and a second `getUpdates` ending the first with
409, as Telegram does when two programs read one bot. Inline keyboards sent with a message come
back as `callback_query` updates when a test presses a button (`press`), each answered once with
`answerCallbackQuery`; an edit without `reply_markup` takes the keyboard away, as Telegram's does.

As a program, for the end-to-end suite: `python -m lnk_testing.telegram --port 8081`. Then
`POST /_fake/private {"user": {...}, "text": ...}`, `POST /_fake/group {"chat", "user", "text",
"mention", "reply_to"}`, `POST /_fake/press {"user", "message_id", "data"}`, `POST /_fake/flood {"method",
"retry_after", "times"}` inject, and `GET /_fake/chats/<chat id>` lists what the bot sent there.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from link_plugin.waits import within
from lnk_testing.serving import Restartable
from lnk_testing.trouble import Trouble

TOKEN = "123456789:AAF-lnk-testing-token-0123456789abcd"
LIMIT = 4096
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly "
    "the same as a current content and reply markup of the message"
)
CONFLICT = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"

_INTS = {"chat_id", "message_id", "offset", "limit", "timeout", "reply_to_message_id"}
_JSON = {"allowed_updates", "reply_parameters", "entities", "reaction", "link_preview_options", "reply_markup"}
STALE_QUERY = "Bad Request: query is too old and response timeout expired or query ID is invalid"


@dataclass(frozen=True)
class User:
    id: int
    first_name: str
    username: str | None = None

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "is_bot": False, "first_name": self.first_name}
        if self.username:
            data["username"] = self.username
        return data


@dataclass
class Sent:
    """A message the bot sent, with every text it held and when."""

    chat: int
    message_id: int
    history: list[tuple[float, str]]
    reply_to: int | None = None
    reactions: list[str] = field(default_factory=list)
    keyboard: list[list[dict[str, Any]]] | None = None
    """The inline keyboard the message shows now."""
    pressable: set[str] = field(default_factory=set)
    """The callback data of every button it has shown: a press can cross the edit that took it away."""

    @property
    def text(self) -> str:
        return self.history[-1][1]

    @property
    def buttons(self) -> list[str]:
        """The labels of the buttons it shows now."""
        return [button["text"] for row in self.keyboard or [] for button in row]

    def show(self, markup: dict[str, Any] | None) -> None:
        self.keyboard = (markup or {}).get("inline_keyboard") or None
        self.pressable |= {b["callback_data"] for row in self.keyboard or [] for b in row if "callback_data" in b}


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float
    status: int = 200


class _ApiError(Exception):
    def __init__(self, status: int, description: str, parameters: dict[str, Any] | None = None) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters


def utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class FakeTelegram(Restartable, Trouble):
    def __init__(self, token: str = TOKEN, *, username: str = "lnk_test_bot", port: int = 0) -> None:
        self.token = token
        self.bot = {
            "id": int(token.split(":")[0]),
            "is_bot": True,
            "first_name": "Lnk Test",
            "username": username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }
        self.calls: list[Call] = []
        self._sent: dict[int, Sent] = {}
        self._reactions: dict[tuple[int, int], list[str]] = {}
        self._chats: dict[int, dict[str, Any]] = {}
        self._updates: list[dict[str, Any]] = []
        self._update_ids = itertools.count(1000)
        self._message_ids = itertools.count(1)
        self._query_ids = itertools.count(7000)
        self.queries: dict[str, str | None] = {}
        """Callback queries by id: None until answered, then the text shown ("" for none)."""
        self._polls = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._arrived: asyncio.Event | None = None
        Restartable.__init__(self, port)
        Trouble.__init__(self)
        self._closing = False

    # -- serving -------------------------------------------------------------------------------

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/bot{token}/{method}", self._api, methods=["GET", "POST"]),
                Route("/_fake/private", self._control_private, methods=["POST"]),
                Route("/_fake/group", self._control_group, methods=["POST"]),
                Route("/_fake/press", self._control_press, methods=["POST"]),
                Route("/_fake/flood", self._control_flood, methods=["POST"]),
                Route("/_fake/chats/{chat}", self._control_chat, methods=["GET"]),
            ],
            lifespan=self._lifespan,
        )

    @asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self._loop = asyncio.get_running_loop()
        self._arrived = asyncio.Event()
        yield

    @property
    def origin(self) -> str:
        """What `LNK_TELEGRAM_API` takes: the bridge adds `/bot<token>/<method>`."""
        return f"http://127.0.0.1:{self._port}"

    def stop(self) -> None:
        """Stop answering (connections are refused) until `start` again; long polls end first."""
        self._closing = True
        self._wake()
        super().stop()
        self._closing = False

    def __enter__(self) -> FakeTelegram:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what tests inject ---------------------------------------------------------------------

    def meet(self, user: User) -> None:
        """`user` has talked to the bot before, so the bot may write to them first."""
        with self._lock:
            self._chats[user.id] = {"id": user.id, "type": "private", "first_name": user.first_name}

    def private(self, user: User, text: str | None = None, *, reply_to: int | None = None, **fields: Any) -> int:
        """A message from `user` in their private chat with the bot (`reply_to` answers the bot's
        message); its message id."""
        chat = {"id": user.id, "type": "private", "first_name": user.first_name}
        if reply_to is not None:
            fields["reply_to_message"] = self._replied(reply_to)
        return self._message(chat, user, text, fields)

    def group(
        self,
        chat: int,
        user: User,
        text: str,
        *,
        mention: bool | Literal["text"] = False,
        reply_to: int | None = None,
        title: str = "A group",
    ) -> int:
        """A message in a group; `mention` puts @bot in front ("text": the bot's name, as a
        text_mention, the way a user without a username is mentioned), `reply_to` answers the
        bot's message."""
        fields: dict[str, Any] = {}
        if mention == "text":
            name = str(self.bot["first_name"])
            text = f"{name} {text}"
            bot = {k: self.bot[k] for k in ("id", "is_bot", "first_name", "username")}
            fields["entities"] = [{"type": "text_mention", "offset": 0, "length": utf16(name), "user": bot}]
        elif mention:
            handle = f"@{self.bot['username']}"
            text = f"{handle} {text}"
            fields["entities"] = [{"type": "mention", "offset": 0, "length": utf16(handle)}]
        if reply_to is not None:
            fields["reply_to_message"] = self._replied(reply_to)
        return self._message({"id": chat, "type": "supergroup", "title": title}, user, text, fields)

    def _replied(self, message_id: int) -> dict[str, Any]:
        with self._lock:
            return self._message_json(self._sent[message_id])

    def photo(self, user: User) -> int:
        photo = [{"file_id": "AgAD-photo", "file_unique_id": "photo1", "width": 90, "height": 90}]
        return self.private(user, None, photo=photo, caption="a picture")

    def edited(self, user: User, message_id: int, text: str) -> None:
        chat = {"id": user.id, "type": "private", "first_name": user.first_name}
        message = {
            "message_id": message_id,
            "date": int(time.time()) - 5,
            "edit_date": int(time.time()),
            "chat": chat,
            "from": user.json(),
            "text": text,
        }
        self.update("edited_message", message)

    def press(self, user: User, message_id: int, data: str) -> str:
        """`user` presses the button with `data` under the bot's message; the callback query's id.
        Whoever sees a message can press its buttons, so `user` isn't checked against its chat."""
        with self._lock:
            sent = self._sent[message_id]
            if data not in sent.pressable:
                raise AssertionError(f"message {message_id} never showed a button with {data!r}")
            message = self._message_json(sent)
            query = str(next(self._query_ids))
            self.queries[query] = None
        payload = {"id": query, "from": user.json(), "message": message, "chat_instance": f"-{sent.chat}", "data": data}
        self.update("callback_query", payload)
        return query

    def update(self, kind: str, payload: dict[str, Any]) -> None:
        with self._lock:
            self._updates.append({"update_id": next(self._update_ids), kind: payload})
        self._wake()

    def _message(self, chat: dict[str, Any], user: User, text: str | None, fields: dict[str, Any]) -> int:
        with self._lock:
            self._chats[chat["id"]] = chat
            message_id = next(self._message_ids)
        message = {"message_id": message_id, "date": int(time.time()), "chat": chat, "from": user.json(), **fields}
        if text is not None:
            message["text"] = text
        self.update("message", message)
        return message_id

    # -- what tests read -----------------------------------------------------------------------

    def messages(self, chat: int) -> list[Sent]:
        """What the bot sent in a chat, in order."""
        with self._lock:
            return [sent for sent in self._sent.values() if sent.chat == chat]

    def texts(self, chat: int) -> list[str]:
        return [sent.text for sent in self.messages(chat)]

    def called(self, method: str) -> list[Call]:
        with self._lock:
            return [call for call in self.calls if call.method == method]

    @property
    def pending(self) -> int:
        """Updates not yet confirmed by an offset."""
        with self._lock:
            return len(self._updates)

    def wait(self, condition: Callable[[], object], timeout: float = 20.0) -> None:
        """Poll `condition` every 20 ms; fail the test when it isn't true within `timeout`."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {timeout} s; the bot sent: {self._everything()}")
            time.sleep(0.02)

    def _everything(self) -> dict[int, list[str]]:
        with self._lock:
            chats: dict[int, list[str]] = {}
            for sent in self._sent.values():
                chats.setdefault(sent.chat, []).append(sent.text)
            return chats

    # -- the Bot API ---------------------------------------------------------------------------

    async def _api(self, request: Request) -> Response:
        method = request.path_params["method"]
        params = await self._params(request)
        call = Call(method, params, time.monotonic())
        with self._lock:
            self.calls.append(call)
        struck = self.strike(method)
        try:
            if request.path_params["token"] != self.token:
                raise _ApiError(401, "Unauthorized")
            if (wait := struck.retry_after) is not None:
                raise _ApiError(429, f"Too Many Requests: retry after {wait:g}", {"retry_after": wait})
            if struck.failing:
                call.status = 502
                return Response("<html><body>502 Bad Gateway</body></html>", status_code=502, media_type="text/html")
            handler = getattr(self, f"_{method}", None)
            if handler is None:
                raise _ApiError(404, "Not Found")
            result = await handler(params)
        except _ApiError as exc:
            call.status = exc.status
            body: dict[str, Any] = {"ok": False, "error_code": exc.status, "description": exc.description}
            if exc.parameters:
                body["parameters"] = exc.parameters
            return JSONResponse(body, status_code=exc.status)
        if struck.late is not None:
            await asyncio.sleep(struck.late)
        return JSONResponse({"ok": True, "result": result})

    @staticmethod
    async def _params(request: Request) -> dict[str, Any]:
        if request.headers.get("content-type", "").startswith("application/json"):
            data: dict[str, Any] = await request.json()
            return data
        raw: dict[str, Any] = dict(request.query_params)
        if request.method == "POST":
            raw.update((await request.form()).items())
        params: dict[str, Any] = {}
        for name, value in raw.items():
            if name in _INTS:
                params[name] = int(value)
            elif name in _JSON and isinstance(value, str):
                params[name] = json.loads(value)
            else:
                params[name] = value
        return params

    async def _getMe(self, params: dict[str, Any]) -> dict[str, Any]:
        return self.bot

    async def _getUpdates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = params.get("offset")
        limit = params.get("limit") or 100
        timeout = float(params.get("timeout") or 0)
        allowed = params.get("allowed_updates") or None
        with self._lock:
            self._polls += 1
            mine = self._polls
            if offset is not None and offset < 0:
                self._updates = self._updates[offset:]
            elif offset is not None:
                self._updates = [u for u in self._updates if u["update_id"] >= offset]
        self._wake()
        deadline = time.monotonic() + timeout
        while True:
            arrived = self._arrived
            with self._lock:
                if self._polls != mine:
                    raise _ApiError(409, CONFLICT)
                batch = [u for u in self._updates if allowed is None or any(k in u for k in allowed)][:limit]
            remaining = deadline - time.monotonic()
            if batch or remaining <= 0 or arrived is None or self._closing:
                return batch
            with suppress(TimeoutError):
                await within(arrived.wait(), remaining)

    async def _sendMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        chat = params["chat_id"]
        text = self._text(params)
        reply = params.get("reply_parameters") or {}
        reply_to = reply.get("message_id", params.get("reply_to_message_id"))
        with self._lock:
            if chat not in self._chats:
                raise _ApiError(400, "Bad Request: chat not found")
            sent = Sent(chat, next(self._message_ids), [(time.monotonic(), text)], reply_to)
            sent.show(params.get("reply_markup"))
            self._sent[sent.message_id] = sent
        return self._message_json(sent)

    async def _editMessageText(self, params: dict[str, Any]) -> dict[str, Any]:
        text = self._text(params)
        with self._lock:
            sent = self._sent.get(params["message_id"])
            if sent is None or sent.chat != params["chat_id"]:
                raise _ApiError(400, "Bad Request: message to edit not found")
            markup = params.get("reply_markup")
            if sent.text == text and sent.keyboard == ((markup or {}).get("inline_keyboard") or None):
                raise _ApiError(400, NOT_MODIFIED)
            sent.show(markup)
            if sent.text != text:
                sent.history.append((time.monotonic(), text))
        return self._message_json(sent)

    async def _answerCallbackQuery(self, params: dict[str, Any]) -> bool:
        query = str(params["callback_query_id"])
        with self._lock:
            if self.queries.get(query, "") is not None:
                raise _ApiError(400, STALE_QUERY)
            self.queries[query] = str(params.get("text") or "")
        return True

    async def _sendChatAction(self, params: dict[str, Any]) -> bool:
        with self._lock:
            if params["chat_id"] not in self._chats:
                raise _ApiError(400, "Bad Request: chat not found")
        return True

    async def _setMessageReaction(self, params: dict[str, Any]) -> bool:
        reactions = [r.get("emoji", "") for r in params.get("reaction") or []]
        with self._lock:
            self._chats.setdefault(params["chat_id"], {})
            marks = self._reactions.setdefault((params["chat_id"], params["message_id"]), [])
            marks.extend(reactions)
        return True

    async def _deleteWebhook(self, params: dict[str, Any]) -> bool:
        return True

    def reactions(self, chat: int, message_id: int) -> list[str]:
        """Reactions the bot put on a message (the steered mark)."""
        with self._lock:
            return list(self._reactions.get((chat, message_id), []))

    @staticmethod
    def _text(params: dict[str, Any]) -> str:
        text = str(params.get("text") or "")
        if not text.strip():
            raise _ApiError(400, "Bad Request: message text is empty")
        if utf16(text) > LIMIT:
            raise _ApiError(400, "Bad Request: message is too long")
        return text

    def _message_json(self, sent: Sent) -> dict[str, Any]:
        data: dict[str, Any] = {
            "message_id": sent.message_id,
            "from": {k: self.bot[k] for k in ("id", "is_bot", "first_name", "username")},
            "chat": self._chats.get(sent.chat, {"id": sent.chat, "type": "private"}),
            "date": int(time.time()),
            "text": sent.text,
        }
        if len(sent.history) > 1:
            data["edit_date"] = int(time.time())
        if sent.keyboard:
            data["reply_markup"] = {"inline_keyboard": sent.keyboard}
        return data

    def _wake(self) -> None:
        """Wake every long poll waiting in the server's loop, from any thread."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._release)

    def _release(self) -> None:
        if self._arrived is not None:
            self._arrived.set()
        self._arrived = asyncio.Event()

    # -- the same injections over HTTP, for a fake running as a program --------------------------

    async def _control_private(self, request: Request) -> Response:
        body = await request.json()
        return JSONResponse({"message_id": self.private(User(**body["user"]), body.get("text"))})

    async def _control_group(self, request: Request) -> Response:
        body = await request.json()
        mention = body.get("mention")
        message_id = self.group(
            int(body["chat"]),
            User(**body["user"]),
            body["text"],
            mention="text" if mention == "text" else bool(mention),
            reply_to=body.get("reply_to"),
        )
        return JSONResponse({"message_id": message_id})

    async def _control_press(self, request: Request) -> Response:
        body = await request.json()
        query = self.press(User(**body["user"]), int(body["message_id"]), str(body["data"]))
        return JSONResponse({"callback_query_id": query})

    async def _control_flood(self, request: Request) -> Response:
        body = await request.json()
        self.flood(body["method"], float(body.get("retry_after", 1)), int(body.get("times", 1)))
        return JSONResponse({})

    async def _control_chat(self, request: Request) -> Response:
        chat = int(request.path_params["chat"])
        shown = [{"message_id": s.message_id, "text": s.text, "buttons": s.buttons} for s in self.messages(chat)]
        return JSONResponse(shown)


def main() -> None:
    parser = argparse.ArgumentParser(description="A local Telegram Bot API for tests.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", default=TOKEN)
    parser.add_argument("--username", default="lnk_test_bot")
    args = parser.parse_args()
    fake = FakeTelegram(args.token, username=args.username, port=args.port)
    uvicorn.run(fake.app(), host="127.0.0.1", port=args.port, log_level="warning", timeout_graceful_shutdown=1)


if __name__ == "__main__":
    main()
