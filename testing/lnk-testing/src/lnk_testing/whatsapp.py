"""A fake `lnk-whatsapp engine`, for tests: the bridge and `connect` drive it over the same JSON
lines (`lnk_whatsapp.protocol`) as the real engine, and the test plays WhatsApp behind it.

    with FakeWhatsApp() as whatsapp:
        os.environ["LNK_WHATSAPP_ENGINE"] = whatsapp.command
        whatsapp.dm(OWNER, "hello")
        whatsapp.wait(lambda: whatsapp.texts(OWNER_CHAT))

The fake serves in the test's process on a unix socket; `command` is the engine command line a
bridge runs, a small relay (`python -m lnk_testing.whatsapp <socket> <folder>`) joining its stdin
and stdout to that socket, so every engine a bridge starts is one connection here (`engines`,
`folders`). `crash` ends the running engine as a crash would (the relay exits 1), with the last
message delivered again to the next engine when asked, as WhatsApp delivers again a message an
engine never acknowledged; `crash_on_send` ends it while a send is in flight, after the message
landed or before.

It follows the engine's side of the protocol: `ready` with the account's number and hidden id
when linked, `qr` codes while not (`link` plays the phone accepting), `message` events for what
the test sends (`dm`, `group`, mentioning the account by its number), sends answered with an id
and sent once per ref across engines, typing, reactions, edits, pair codes, `ping`. Trouble by
op: `flood` (WhatsApp's rate limit, `retry_after`), `fail` (no connection: `again`), `lose` (the
reply comes late).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lnk_testing.trouble import Trouble

ACCOUNT = "15550000100"
"""The linked account's number."""
HIDDEN = "900000000100"
"""Its hidden id (WhatsApp's `@lid`), which a mention may name instead."""
GROUP = "120363000000000001@g.us"
PAIR_CODE = "K7QM-2XWP"


def chat_of(number: str) -> str:
    """A number's direct chat."""
    return f"{number}@s.whatsapp.net"


@dataclass
class Sent:
    """A message the account sent, with every text it held and when."""

    chat: str
    id: str
    history: list[tuple[float, str]]
    quote: str | None = None
    reactions: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.history[-1][1]


@dataclass
class Call:
    op: str
    at: float
    status: int = 200
    """200 done, 429 rate limited, 502 no connection, 0 the engine ended before it answered."""


@dataclass
class _Engine:
    connection: socket.socket
    folder: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def write(self, said: dict[str, Any]) -> None:
        # An engine that ended misses it: what it missed, WhatsApp delivers again.
        with self.lock, suppress(OSError):
            self.connection.sendall(json.dumps(said).encode() + b"\n")


class FakeWhatsApp(Trouble):
    def __init__(self, *, linked: bool = True, account: str = ACCOUNT) -> None:
        super().__init__()
        self.account = account
        self.linked = linked
        self.sent: list[Sent] = []
        self.calls: list[Call] = []
        self.typing: list[str] = []
        """Chats "typing…" showed in, once a call."""
        self.received: list[dict[str, Any]] = []
        """Every message event delivered, in order."""
        self.folders: list[str] = []
        """The folder each engine was started with."""
        self.engines = 0
        self.paired: list[str] = []
        """Numbers a pair code was asked for."""
        self._refs: dict[str, str] = {}
        self._reactions: dict[str, list[str]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.RLock()
        self._engine: _Engine | None = None
        self._again: dict[str, Any] | None = None
        self._crash_on_send: bool | None = None
        self._directory = tempfile.TemporaryDirectory(prefix="lnk-whatsapp-")
        self.socket = Path(self._directory.name) / "engine.sock"
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._running = False

    @property
    def command(self) -> str:
        """The engine command line for `LNK_WHATSAPP_ENGINE`."""
        return f"{sys.executable} -m lnk_testing.whatsapp {self.socket}"

    def __enter__(self) -> FakeWhatsApp:
        self._server.bind(str(self.socket))
        self._server.listen()
        self._running = True
        threading.Thread(target=self._accept, name="fake-whatsapp", daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self._running = False
        self._server.close()
        with self._lock:
            if self._engine is not None:
                self._engine.connection.close()
        self._directory.cleanup()

    # --- what the test does -------------------------------------------------------------------

    def dm(self, number: str, text: str | None, *, quoted: str | None = None, edited: bool = False) -> str:
        """A message from `number` in their direct chat with the account (None: a photo); its id."""
        return self._deliver(chat_of(number), number, text, group=False, quoted=quoted, edited=edited)

    def group(
        self, number: str, text: str, *, mention: bool = False, hidden: bool = False, quoted: str | None = None
    ) -> str:
        """A message from `number` in the group, mentioning the account (as `@<number>`, or by its
        hidden id with `hidden`) if asked."""
        mentions = [HIDDEN if hidden else self.account] if mention else []
        for who in mentions:
            text = f"@{who} {text}"
        return self._deliver(GROUP, number, text, group=True, quoted=quoted, mentions=mentions)

    def log_out(self) -> None:
        """The device is removed on the phone (Linked devices): the engine hears it's logged out."""
        with self._lock:
            self.linked = False
            engine = self._engine
        if engine is not None:
            engine.write({"event": "logged_out", "why": "401"})

    def link(self) -> None:
        """The phone accepts the device being linked."""
        with self._lock:
            self.linked = True
            engine = self._engine
        if engine is not None:
            engine.write({"event": "linked", "me": [self.account]})
            engine.write({"event": "ready", "me": [self.account, HIDDEN]})

    def crash(self, *, again: bool = False) -> None:
        """The running engine ends as a crash would; with `again`, the last message delivered
        comes again to the next engine, as WhatsApp delivers one that was never acknowledged."""
        with self._lock:
            engine = self._engine
            self._engine = None
            if again and self.received:
                self._again = self.received[-1]
        if engine is not None:
            engine.connection.shutdown(socket.SHUT_RDWR)
            engine.connection.close()

    def crash_on_send(self, *, landed: bool) -> None:
        """The engine ends while the next send is in flight: after the message landed, or before."""
        self._crash_on_send = landed

    # --- what the test reads ------------------------------------------------------------------

    def messages(self, chat: str) -> list[Sent]:
        with self._lock:
            return [s for s in self.sent if s.chat == chat]

    def texts(self, chat: str) -> list[str]:
        return [s.text for s in self.messages(chat)]

    def called(self, op: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.op == op]

    @property
    def running(self) -> bool:
        return self._engine is not None

    def wait(self, condition: Callable[[], object], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"not within {timeout} s; the account sent {[(s.chat, s.text) for s in self.sent]}"
                )
            time.sleep(0.02)

    # --- the engine's side --------------------------------------------------------------------

    def _deliver(
        self,
        chat: str,
        sender: str,
        text: str | None,
        *,
        group: bool,
        quoted: str | None = None,
        edited: bool = False,
        mentions: list[str] | None = None,
    ) -> str:
        message = {
            "id": f"3EB0{next(self._ids):012X}",
            "chat": chat,
            "sender": sender,
            "group": group,
            "text": text,
            "mentions": mentions or [],
            "quoted": quoted,
            "edited": edited,
        }
        with self._lock:
            self.received.append(message)
            engine = self._engine
        if engine is not None:
            engine.write({"event": "message", "message": message})
        return str(message["id"])

    def _accept(self) -> None:
        while self._running:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(_Engine(connection),), daemon=True).start()

    def _serve(self, engine: _Engine) -> None:
        lines = engine.connection.makefile("rb")
        hello = json.loads(lines.readline() or b"{}")
        engine.folder = str(hello.get("folder", ""))
        with self._lock:
            self.engines += 1
            self.folders.append(engine.folder)
            self._engine = engine
            again, self._again = self._again, None
        if self.linked:
            engine.write({"event": "ready", "me": [self.account, HIDDEN]})
            if again is not None:
                engine.write({"event": "message", "message": again})
        else:
            engine.write({"event": "qr", "code": "2@fake-qr-code,lnk-testing"})
        for raw in lines:
            if not raw.strip():
                continue
            request = json.loads(raw)
            threading.Thread(target=self._answer, args=(engine, request), daemon=True).start()
        with self._lock:  # its stdin closed: the engine was stopped
            if self._engine is engine:
                self._engine = None
        engine.connection.close()

    def _answer(self, engine: _Engine, request: dict[str, Any]) -> None:
        op = str(request["op"])
        reply: dict[str, Any] = {"id": request["id"], "ok": True}
        struck = self.strike(op)
        call = Call(op, time.monotonic())
        with self._lock:
            self.calls.append(call)
        if struck.retry_after is not None:
            call.status = 429
            engine.write({**reply, "ok": False, "error": "rate-overlimit", "retry_after": struck.retry_after})
            return
        if struck.failing:
            call.status = 502
            engine.write({**reply, "ok": False, "error": "websocket not connected", "again": True})
            return
        if op == "send" and self._crash_on_send is not None:
            landed, self._crash_on_send = self._crash_on_send, None
            if landed:
                self._send(request)
            call.status = 0
            self.crash()
            return
        if op == "send":
            reply["message"] = self._send(request)
        elif op == "edit":
            with self._lock:
                (sent,) = [s for s in self.sent if s.id == request["message"]]
                sent.history.append((time.monotonic(), str(request["text"])))
        elif op == "typing":
            with self._lock:
                self.typing.append(str(request["chat"]))
        elif op == "react":
            with self._lock:
                self.reactions_for(str(request["message"])).append(str(request["emoji"]))
        elif op == "pair":
            with self._lock:
                self.paired.append(str(request["phone"]))
            reply["code"] = PAIR_CODE
        elif op == "ping":
            reply["version"] = "fake"
        elif op == "logout":
            self.linked = False
        if struck.late is not None:
            time.sleep(struck.late)
        engine.write(reply)

    def _send(self, request: dict[str, Any]) -> str:
        with self._lock:
            ref = request.get("ref")
            if ref is not None and ref in self._refs:
                return self._refs[ref]
            sent = Sent(
                str(request["chat"]),
                f"3EB1{next(self._ids):012X}",
                [(time.monotonic(), str(request["text"]))],
                quote=request.get("quote"),
            )
            self.sent.append(sent)
            if ref is not None:
                self._refs[ref] = sent.id
            return sent.id

    def reactions_for(self, message: str) -> list[str]:
        """The reactions the account put on a message someone sent it."""
        with self._lock:
            return self._reactions.setdefault(message, [])


def relay(path: str, folder: str) -> int:
    """The engine a bridge runs: its stdin and stdout joined to the fake's socket. Exits 1 when
    the fake ends it (a crash), 0 when its stdin closes (stopped); like the real engine, it
    ignores SIGTERM, so a stopping bridge can still send what it is showing."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    connection.sendall(json.dumps({"folder": folder}).encode() + b"\n")
    stopped = threading.Event()

    def upward() -> None:
        for raw in sys.stdin.buffer:
            connection.sendall(raw)
        stopped.set()
        connection.shutdown(socket.SHUT_WR)

    threading.Thread(target=upward, daemon=True).start()
    out = sys.stdout.buffer
    while chunk := connection.recv(65536):
        out.write(chunk)
        out.flush()
    return 0 if stopped.is_set() else 1


if __name__ == "__main__":
    os._exit(relay(sys.argv[1], sys.argv[2]))
