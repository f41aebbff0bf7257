"""JSON-RPC with one signal-cli process over its stdin and stdout, and its errors in Link's terms.

Each request is one JSON line with an id of its own; its answer comes back as a line with that
id. What signal-cli hears from Signal comes as notifications (`receive`, no id), handed to the
`heard` callback in the order they came. signal-cli's log goes to its stderr, which is the
bridge's log.

signal-cli's errors by code: -1 a user error (a wrong recipient), -3 an input/output error (the
network), -4 an identity not trusted, -5 Signal's rate limit (its results say how long to wait).
A process that ends fails every request still waiting, and every later one, as `Gone`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any

from link_plugin.bridge.retry import Interrupted, RetryLater
from link_plugin.waits import within

IO_ERROR = -3
RATE_LIMIT = -5
RATE_LIMIT_WAIT = 5.0
"""Seconds to wait out a rate limit whose results name no wait."""
LINE = 16 << 20
"""The longest line read from signal-cli (a message with its quote and mentions is far shorter)."""
CALL_TIMEOUT = 120.0
"""Seconds a request may take: a send to a slow network, a link waiting for the phone are longer."""

Heard = Callable[[dict[str, Any]], None]


class RpcError(Exception):
    """signal-cli answered with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"signal-cli: {message} ({code})")
        self.code = code
        self.message = message
        self.data = data

    def retry_after(self) -> float:
        """The longest wait Signal's rate limit asked for among the results, if any."""
        response = self.data.get("response") if isinstance(self.data, dict) else None
        results = response.get("results", []) if isinstance(response, dict) else []
        waits = [float(r["retryAfterSeconds"]) for r in results if isinstance(r, dict) and r.get("retryAfterSeconds")]
        return max(waits) if waits else RATE_LIMIT_WAIT


class Gone(Exception):
    """The signal-cli process ended (or wasn't running): the request may not have been made."""


class SignalCli:
    """One running signal-cli jsonRpc process."""

    def __init__(self, process: asyncio.subprocess.Process, heard: Heard) -> None:
        self._process = process
        self._heard = heard
        self._ids = itertools.count(1)
        self._waiting: dict[str, asyncio.Future[Any]] = {}
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, argv: list[str], env: Mapping[str, str], heard: Heard) -> SignalCli:
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                env=dict(env),
                limit=LINE,
                # Its own process group: a SIGTERM to the bridge's (Link stopping the agent) leaves
                # it running while the bridge finishes the answers it is showing, then closes it.
                # A bridge that dies closes its stdin, and signal-cli ends by itself.
                start_new_session=True,
            )
        except OSError as exc:
            raise Gone(f"signal-cli couldn't be started: {exc}") from exc
        return cls(process, heard)

    @property
    def running(self) -> bool:
        return self._process.returncode is None and not self._reader.done()

    async def call(self, method: str, params: Mapping[str, Any] | None = None, timeout: float = CALL_TIMEOUT) -> Any:
        """Ask signal-cli; its result. Raises RpcError for its error, Gone when it ended."""
        if not self.running:
            raise Gone("signal-cli isn't running")
        ident = str(next(self._ids))
        request: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": ident}
        if params:
            request["params"] = dict(params)
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = answer
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(request, ensure_ascii=False).encode() + b"\n")
            await stdin.drain()
            return await within(answer, timeout)
        except (ConnectionError, BrokenPipeError) as exc:
            raise Gone(f"signal-cli ended ({exc})") from None
        finally:
            self._waiting.pop(ident, None)

    async def ended(self) -> int:
        """Wait until the process ends; its exit code."""
        with suppress(asyncio.CancelledError):
            await asyncio.shield(self._reader)
        return await self._process.wait()

    async def close(self) -> None:
        """End the process: its stdin closed first (signal-cli ends by itself then), killed if it lingers."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            await within(self._process.wait(), 5.0)
        except TimeoutError:
            self._kill()
            await self._process.wait()
        except asyncio.CancelledError:
            # The bridge is stopped meanwhile: it ends now, and is waited for all the same.
            self._kill()
            await self._process.wait()
            raise
        finally:
            self._reader.cancel()
            with suppress(asyncio.CancelledError):
                await self._reader

    def _kill(self) -> None:
        with suppress(ProcessLookupError):
            self._process.kill()

    async def _read(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        try:
            while line := await stdout.readline():
                self._take(line)
        finally:
            for waiting in self._waiting.values():
                if not waiting.done():
                    waiting.set_exception(Gone("signal-cli ended before it answered"))

    def _take(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return  # not JSON-RPC: signal-cli says nothing else on stdout, so nothing to act on
        if not isinstance(message, dict):
            return
        ident = message.get("id")
        if ident is None:
            if message.get("method") == "receive" and isinstance(message.get("params"), dict):
                self._heard(message["params"])
            return
        waiting = self._waiting.get(str(ident))
        if waiting is None or waiting.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            waiting.set_exception(RpcError(int(error.get("code", 0)), str(error.get("message", "")), error.get("data")))
        else:
            waiting.set_result(message.get("result"))


@contextmanager
def translated() -> Iterator[None]:
    """signal-cli's rate limit, network errors and a process that ended, as the bridge retries them."""
    try:
        yield
    except RpcError as exc:
        if exc.code == RATE_LIMIT:
            raise RetryLater(exc.retry_after()) from exc
        if exc.code == IO_ERROR:
            raise Interrupted(exc.message) from exc
        raise
    except (Gone, TimeoutError) as exc:
        raise Interrupted(str(exc) or type(exc).__name__) from exc


@asynccontextmanager
async def running(argv: list[str], env: Mapping[str, str]) -> AsyncIterator[SignalCli]:
    """One signal-cli for a few requests (linking, a look-up), ended after them; what it hears is ignored."""
    cli = await SignalCli.start(argv, env, lambda _: None)
    try:
        yield cli
    finally:
        await cli.close()
