"""The engine as a child process, seen from the bridge and `connect`: requests answered by id,
events in order, and its end.

The engine is `lnk-whatsapp engine` (this package's own, run by this interpreter) unless
`LNK_WHATSAPP_ENGINE` names another command line (the tests' fake engine); the channel's folder is
its last argument. Its stderr goes to this process's, so the bridge's log holds what it says.

A request whose engine ends before it answers fails with `retry.Interrupted`: whoever called may
call again once an engine runs (`wait_running`); a send called again under the same ref is sent
once (`protocol`). The engine's events, then None once it ended, come from `events`.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from link_plugin.bridge.retry import Interrupted, RetryLater
from link_plugin.errors import LinkError
from link_plugin.waits import within
from lnk_whatsapp.protocol import Event, ProtocolError, Reply, Request, line, parse

ENV_ENGINE = "LNK_WHATSAPP_ENGINE"
LIMIT = 16 * 1024 * 1024
"""Longest line from the engine (a message's event, WhatsApp's 65,536 characters and more)."""
STOPPING = 5.0
"""Seconds an engine has to end once its stdin closed."""


def command() -> list[str]:
    """The engine's command line, the folder to be added."""
    named = os.environ.get(ENV_ENGINE)
    return shlex.split(named) if named else [sys.executable, "-m", "lnk_whatsapp", "engine"]


class EngineFailed(LinkError):
    """The engine answered a request with an error that calling again won't mend."""


class EngineProcess:
    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._process: asyncio.subprocess.Process | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Reply]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._running = asyncio.Event()
        self.events: asyncio.Queue[Event | None] = asyncio.Queue()
        self.starts = 0

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    async def start(self) -> None:
        """Start an engine; the one before must have ended."""
        self._process = await asyncio.create_subprocess_exec(
            *command(),
            str(self._folder),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=LIMIT,
        )
        self.starts += 1
        self._running.set()
        self._reader = asyncio.create_task(self._read(self._process))

    async def wait_running(self) -> None:
        await self._running.wait()

    async def call(self, op: str, **fields: Any) -> Reply:
        """One request, answered; raises `Interrupted` when no engine runs or it ends first,
        `RetryLater` at WhatsApp's rate limit, `EngineFailed` for any other error."""
        process = self._process
        if process is None or process.stdin is None or process.returncode is not None or not self._running.is_set():
            raise Interrupted("the WhatsApp engine isn't running")
        request = Request(id=next(self._ids), op=op, **fields)  # type: ignore[arg-type]
        answered: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._waiting[request.id] = answered
        try:
            process.stdin.write(line(request))
            await process.stdin.drain()
            reply = await answered
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise Interrupted("the WhatsApp engine ended") from exc
        finally:
            self._waiting.pop(request.id, None)
        if reply.ok:
            return reply
        if reply.retry_after is not None:
            raise RetryLater(reply.retry_after)
        if reply.again:
            raise Interrupted(f"WhatsApp can't be reached: {reply.error}")
        raise EngineFailed(f"WhatsApp refused it: {reply.error}")

    async def _read(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        try:
            while raw := await process.stdout.readline():
                try:
                    said = parse(raw)
                except ProtocolError as exc:
                    print(exc, file=sys.stderr, flush=True)
                    continue
                if isinstance(said, Event):
                    self.events.put_nowait(said)
                elif (answered := self._waiting.get(said.id)) is not None and not answered.done():
                    answered.set_result(said)
        finally:
            self._running.clear()
            await process.wait()
            for answered in self._waiting.values():
                if not answered.done():
                    answered.set_exception(Interrupted("the WhatsApp engine ended before it answered"))
            self.events.put_nowait(None)

    async def stop(self) -> None:
        """End the engine: its stdin closed (it ignores SIGTERM, so a stopping agent's bridge can
        still send what it is showing), then a kill if it hasn't ended within `STOPPING`."""
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            if process.stdin is not None:
                process.stdin.close()
            try:
                await within(process.wait(), STOPPING)
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)
