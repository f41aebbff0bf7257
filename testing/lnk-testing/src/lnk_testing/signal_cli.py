"""A local Signal behind a fake signal-cli, for tests: the bridge runs `fake.program` where it would
run signal-cli, and speaks the same JSON-RPC with it on its stdin and stdout.

    with FakeSignal() as signal:
        os.environ["LNK_SIGNAL_CLI"] = str(signal.program)
        signal.dm(OWNER, "hello")
        signal.wait(lambda: signal.texts(OWNER.number))

`fake.program` is a small executable that hands its arguments, the environment signal-cli would
read (`JAVA_OPTS`, `JAVA_HOME`) and then its stdin and stdout to this process over a unix socket:
each run is one signal-cli process as the bridge sees it (`started` keeps what each was started
with), and `crash` ends every one at once, as a killed Java would end. What the fake serves is
signal-cli's `jsonRpc`: `version`; `startLink` and `finishLink` (answered once the phone scans the
link: `scan`), `listAccounts`, `getUserStatus`; `send` (a message, its quote, an edit by
`editTimestamp`), `sendTyping`, `sendReaction`; an unknown method gets JSON-RPC's -32601.

Messages to the agent's account (`dm`, `group` with `mention`, `edit`) are held, as Signal's
servers hold them, until a signal-cli running as that account takes them: each goes to one
process once, as a `receive` notification with signal-cli's envelope, so a message sent while
signal-cli was down comes when it is back. `replay` hands one over again, as signal-cli does
with what it had received but not yet handled when it died; for an account in `unlinked` (its
device removed on the phone) signal-cli says it is not registered and ends with 1. Trouble comes in signal-cli's own
words, by the method's name ("send", "edit" for a send with `editTimestamp`): a rate limit is
error -5 with `retryAfterSeconds` in its results and nothing sent, a failure error -3 (the
network) and nothing sent, a loss the message sent and its answer late.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shlex
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lnk_testing.trouble import Trouble

VERSION = "0.13.19"
LIMIT = 2000
MENTION = "\ufffc"
PASSED = ("JAVA_OPTS", "JAVA_HOME")
"""What of its environment the fake program hands over: what signal-cli's start script reads."""


@dataclass(frozen=True)
class SignalUser:
    number: str
    name: str
    uuid: str = field(default_factory=lambda: str(uuid.uuid4()))


ACCOUNT = SignalUser("+15550100100", "Agent")
"""The agent's account, linked as a device."""
GROUP = base64.b64encode(bytes(range(250, 256)) * 5 + b"\xfb\xef").decode()
"""A group's id, as Signal spells it (base64 with `+` and `/`)."""


@dataclass
class Sent:
    """A message the agent's account sent: where, every text it held and when, what it quotes."""

    chat: str
    timestamp: int
    history: list[tuple[float, str]]
    quote: tuple[str, int] | None = None

    @property
    def text(self) -> str:
        return self.history[-1][1]


@dataclass(frozen=True)
class Call:
    """One call of the bridge's: the method ("edit" for a send that edits), how it went (200, 429
    for a rate limit, 502 for a failure) and when."""

    method: str
    params: dict[str, Any]
    status: int
    at: float


@dataclass(frozen=True)
class Started:
    """One signal-cli process as it was started: its arguments and what its environment said to Java."""

    argv: list[str]
    env: dict[str, str]

    def option(self, name: str) -> str | None:
        return self.argv[self.argv.index(name) + 1] if name in self.argv else None


class _Process:
    """One fake signal-cli, connected."""

    def __init__(self, started: Started, writer: asyncio.StreamWriter) -> None:
        self.started = started
        self.writer = writer
        self.account = started.option("-a")
        self.config = started.option("--config") or ""
        self.receives = "--receive-mode=manual" not in started.argv
        """Whether it takes what Signal holds for its account as it starts (signal-cli's default)."""

    def write(self, message: dict[str, Any]) -> None:
        if not self.writer.is_closing():
            self.writer.write(json.dumps(message).encode() + b"\n")


class FakeSignal(Trouble):
    def __init__(self, account: SignalUser = ACCOUNT) -> None:
        super().__init__()
        self.account = account
        self._folder = tempfile.TemporaryDirectory(prefix="lnk-signal-")
        self.socket = Path(self._folder.name) / "signal.sock"
        self.program = Path(self._folder.name) / "signal-cli"
        command = f"{shlex.quote(sys.executable)} -m lnk_testing.signal_cli {shlex.quote(str(self.socket))}"
        self.program.write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        self.program.chmod(0o755)
        self.users: dict[str, SignalUser] = {account.number: account}
        self.sent: list[Sent] = []
        self.typing: list[str] = []
        self.reactions: dict[tuple[str, int], list[str]] = {}
        self.started: list[Started] = []
        self.calls: list[Call] = []
        self.linked: dict[str, list[str]] = {}
        """Accounts linked, by signal-cli's --config folder."""
        self.links: list[str] = []
        """The sgnl:// links startLink made."""
        self.device_names: list[str] = []
        self.unlinked: set[str] = set()
        """Accounts whose device was unlinked on the phone: signal-cli ends at once for them, as it does."""
        self._scans: dict[str, str] = {}
        self._held: list[dict[str, Any]] = []
        self._envelopes: dict[str, dict[str, Any]] = {}
        self._processes: list[_Process] = []
        self._clock = itertools.count(int(time.time() * 1000))
        self._lock = threading.RLock()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    # -- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> FakeSignal:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._folder.cleanup()

    async def _serve(self) -> None:
        self._server = await asyncio.start_unix_server(self._connected, path=str(self.socket), limit=16 << 20)

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for process in list(self._processes):
            process.writer.close()

    # -- the test's side -----------------------------------------------------------------------

    def user(self, number: str, name: str) -> SignalUser:
        """Someone on Signal (getUserStatus finds them)."""
        made = SignalUser(number, name)
        with self._lock:
            self.users[number] = made
        return made

    def dm(
        self,
        user: SignalUser,
        text: str,
        *,
        quote: int | None = None,
        attachment: bool = False,
        hidden: bool = False,
    ) -> str:
        """A message from `user` to the agent's account, quoting the account's message `quote`;
        `hidden`: the sender shares no number (Signal's phone number privacy). Its key."""
        data: dict[str, Any] = {"message": text or None}
        if attachment:
            data["attachments"] = [{"contentType": "image/png", "filename": "photo.png", "size": 1024}]
        return self._deliver(user, data, quote=quote, hidden=hidden)

    def group(
        self, user: SignalUser, text: str, *, mention: bool = False, quote: int | None = None, group: str = GROUP
    ) -> str:
        """A message from `user` in a group the account is in, mentioning the account with `mention`."""
        data: dict[str, Any] = {
            "message": f"{MENTION} {text}" if mention else text,
            "groupInfo": {"groupId": group, "groupName": "Friends", "revision": 1, "type": "DELIVER"},
        }
        if mention:
            account = self.account
            data["mentions"] = [
                {"name": account.number, "number": account.number, "uuid": account.uuid, "start": 0, "length": 1}
            ]
        return self._deliver(user, data, quote=quote)

    def edit(self, user: SignalUser, key: str, text: str) -> str:
        """`user` edits their message `key`."""
        target = int(key.rsplit(":", 1)[1])
        return self._deliver(user, {"message": text}, edit=target)

    def replay(self, key: str) -> None:
        """Hand the message `key` over again, as a signal-cli that died before handling it does."""
        with self._lock:
            self._held.append(self._envelopes[key])
        self._hand_over()

    def crash(self) -> None:
        """Every signal-cli running ends at once, as a killed Java does."""
        with self._lock:
            processes = list(self._processes)
        for process in processes:
            self._loop.call_soon_threadsafe(process.writer.close)
        self.wait(lambda: self.connections == 0)

    def scan(self, number: str) -> None:
        """The phone of `number` scans the link shown: the device is linked to its account."""
        self.wait(lambda: self.links)
        with self._lock:
            self._scans[self.links[-1]] = number

    @property
    def held(self) -> int:
        """Messages Signal holds for the account: no signal-cli has taken them yet."""
        with self._lock:
            return len(self._held)

    @property
    def connections(self) -> int:
        with self._lock:
            return len(self._processes)

    def messages(self, chat: str) -> list[Sent]:
        """What the account sent to `chat` (a number, or a group's id)."""
        with self._lock:
            return [s for s in self.sent if s.chat == chat]

    def texts(self, chat: str) -> list[str]:
        return [s.text for s in self.messages(chat)]

    def called(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait(self, condition: Callable[[], object], timeout: float = 20.0) -> None:
        """Poll `condition` every 20 ms; fail the test when it isn't true within `timeout`."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                with self._lock:
                    shown = {s.timestamp: s.text for s in self.sent}
                raise AssertionError(f"not within {timeout} s; the account sent: {shown}")
            time.sleep(0.02)

    # -- Signal's servers ----------------------------------------------------------------------

    def _deliver(
        self,
        user: SignalUser,
        data: dict[str, Any],
        *,
        quote: int | None = None,
        edit: int | None = None,
        hidden: bool = False,
    ) -> str:
        timestamp = next(self._clock)
        data = {"timestamp": timestamp, "expiresInSeconds": 0, "viewOnce": False, **data}
        if quote is not None:
            account = self.account
            data["quote"] = {
                "id": quote,
                "author": account.number,
                "authorNumber": account.number,
                "authorUuid": account.uuid,
                "text": "",
                "attachments": [],
            }
        envelope: dict[str, Any] = {
            "source": user.uuid if hidden else user.number,
            "sourceNumber": None if hidden else user.number,
            "sourceUuid": user.uuid,
            "sourceName": user.name,
            "sourceDevice": 1,
            "timestamp": timestamp,
            "serverReceivedTimestamp": timestamp + 5,
            "serverDeliveredTimestamp": timestamp + 9,
        }
        if edit is not None:
            envelope["editMessage"] = {"targetSentTimestamp": edit, "dataMessage": data}
        else:
            envelope["dataMessage"] = data
        key = f"{user.uuid}:{timestamp}"
        with self._lock:
            self._envelopes[key] = envelope
            self._held.append(envelope)
        self._hand_over()
        return key

    def _hand_over(self) -> None:
        self._loop.call_soon_threadsafe(self._hand_over_now)

    def _hand_over_now(self) -> None:
        with self._lock:
            takers = [p for p in self._processes if p.account == self.account.number and p.receives]
            if not takers:
                return
            held, self._held = self._held, []
        for envelope in held:
            takers[0].write(
                {
                    "jsonrpc": "2.0",
                    "method": "receive",
                    "params": {"envelope": envelope, "account": self.account.number},
                }
            )

    # -- signal-cli's JSON-RPC -----------------------------------------------------------------

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = await reader.readline()
        if not first:
            writer.close()
            return
        hello = json.loads(first)
        process = _Process(Started(hello["argv"], hello["env"]), writer)
        with self._lock:
            self.started.append(process.started)
            refused = process.account is not None and process.account in self.unlinked
            if not refused:
                self._processes.append(process)
        # The program's first line from here says whether signal-cli starts, as its exit code would.
        ending = {"exit": 1, "stderr": f"User {process.account} is not registered."} if refused else {}
        writer.write(json.dumps(ending).encode() + b"\n")
        if refused:
            writer.close()
            return
        self._hand_over_now()
        tasks: set[asyncio.Task[None]] = set()
        try:
            while line := await reader.readline():
                task = asyncio.create_task(self._answer(process, json.loads(line)))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        except (ConnectionError, ValueError):
            pass
        finally:
            with self._lock:
                if process in self._processes:
                    self._processes.remove(process)
            writer.close()

    async def _answer(self, process: _Process, request: dict[str, Any]) -> None:
        method, ident = request.get("method", ""), request.get("id")
        params = request.get("params") or {}
        try:
            result, late = await self._call(process, method, params)
        except _Error as error:
            process.write({"jsonrpc": "2.0", "error": error.body, "id": ident})
        else:
            if late:
                await asyncio.sleep(late)
            process.write({"jsonrpc": "2.0", "result": result, "id": ident})
        await process.writer.drain()

    async def _call(self, process: _Process, method: str, params: dict[str, Any]) -> tuple[Any, float | None]:
        if method == "version":
            return {"version": VERSION}, None
        if method == "startLink":
            link = f"sgnl://linkdevice?uuid={uuid.uuid4().hex[:22]}&pub_key={base64.b64encode(os.urandom(33)).decode()}"
            with self._lock:
                self.links.append(link)
            return {"deviceLinkUri": link}, None
        if method == "finishLink":
            return {"number": await self._linked(process, params)}, None
        if method == "listAccounts":
            with self._lock:
                return [{"number": n} for n in self.linked.get(process.config, [])], None
        if method == "getUserStatus":
            return [self._status(str(r)) for r in _many(params.get("recipient"))], None
        if method in ("send", "sendTyping", "sendReaction"):
            return self._sending(method, params)
        raise _Error(-32601, f"Method not implemented: {method}")

    async def _linked(self, process: _Process, params: dict[str, Any]) -> str:
        link = str(params.get("deviceLinkUri"))
        while True:
            with self._lock:
                number = self._scans.get(link)
                if number is not None:
                    self.linked.setdefault(process.config, []).append(number)
                    self.device_names.append(str(params.get("deviceName", "")))
                    break
            await asyncio.sleep(0.02)
        data = Path(process.config) / "data"
        data.mkdir(parents=True, exist_ok=True)
        (data / "accounts.json").write_text(json.dumps({"accounts": [{"number": number}]}))
        return number

    def _status(self, recipient: str) -> dict[str, Any]:
        with self._lock:
            found = self.users.get(recipient)
        return {
            "recipient": recipient,
            "number": recipient,
            "username": None,
            "uuid": found.uuid if found else None,
            "isRegistered": found is not None,
        }

    def _sending(self, method: str, params: dict[str, Any]) -> tuple[Any, float | None]:
        chat = str(params["groupId"]) if params.get("groupId") else str(_many(params.get("recipient"))[0])
        kind = "edit" if method == "send" and params.get("editTimestamp") else method
        struck = self.strike(kind)
        now = time.monotonic()
        if struck.retry_after is not None:
            self._record(kind, params, 429, now)
            result = {
                "recipientAddress": {"number": chat},
                "type": "RATE_LIMIT_FAILURE",
                "retryAfterSeconds": struck.retry_after,
            }
            raise _Error(
                -5, "Failed to send message due to rate limiting", {"response": {"timestamp": 0, "results": [result]}}
            )
        if struck.failing:
            self._record(kind, params, 502, now)
            raise _Error(-3, "Failed to send message: network failure")
        self._record(kind, params, 200, now)
        timestamp = next(self._clock)
        with self._lock:
            if kind == "sendTyping":
                self.typing.append(chat)
            elif kind == "sendReaction":
                target = (chat, int(params["targetTimestamp"]))
                self.reactions.setdefault(target, []).append(str(params["emoji"]))
            elif kind == "edit":
                (edited,) = [s for s in self.sent if s.chat == chat and s.timestamp == int(params["editTimestamp"])]
                edited.history.append((now, str(params["message"])))
            else:
                text = str(params["message"])
                assert len(text) <= LIMIT, f"a message of {len(text)} characters: Link splits past {LIMIT}"
                quote = params.get("quoteTimestamp")
                quoted = (str(params.get("quoteAuthor")), int(quote)) if quote else None
                self.sent.append(Sent(chat, timestamp, [(now, text)], quoted))
        results = [{"recipientAddress": {"number": chat}, "type": "SUCCESS"}]
        return ({"timestamp": timestamp, "results": results} if kind != "sendTyping" else {}), struck.late

    def _record(self, method: str, params: dict[str, Any], status: int, at: float) -> None:
        with self._lock:
            self.calls.append(Call(method, params, status, at))


class _Error(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.body = {"code": code, "message": message, **({"data": data} if data is not None else {})}


def _many(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def relay(path: str, argv: list[str]) -> int:
    """The fake program: its arguments and environment to the fake, then its stdin and stdout
    through to it until either side ends."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    env = {name: os.environ[name] for name in PASSED if name in os.environ}
    connection.sendall(json.dumps({"argv": argv, "env": env}).encode() + b"\n")

    asked_to_end = threading.Event()

    def upstream() -> None:
        while chunk := os.read(0, 65536):
            connection.sendall(chunk)
        asked_to_end.set()  # stdin closed: signal-cli ends once it answered
        connection.shutdown(socket.SHUT_WR)

    answer = connection.makefile("rb")
    ending = json.loads(answer.readline() or b"{}")
    if ending:
        print(ending["stderr"], file=sys.stderr)
        return int(ending["exit"])
    threading.Thread(target=upstream, daemon=True).start()
    while chunk := answer.read1(65536):
        os.write(1, chunk)
    return 0 if asked_to_end.is_set() else 137


if __name__ == "__main__":
    sys.exit(relay(sys.argv[1], sys.argv[2:]))
