"""The engine: one process serving every agent of one owner, each session from its own agent's folder.

Sessions reach it over a unix socket only the owner's user can open. Each tells it which agent
folder it serves (named by Link, outside every sandbox, never by the agent); a session naming
another owner is refused. The engine ends a few seconds after its last session, or at once when
told (SIGTERM, as a sandbox ending does) or when it can't see a session's folder (see GiveWay),
its socket removed every way.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import logging
import os
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.stdio import stdio_server
from pydantic import ValidationError

from lnk_link_memory import allocator
from lnk_link_memory import server as mcp_server
from lnk_link_memory.folder import Folder
from lnk_link_memory.limits import ENGINE_LINGER_SECONDS
from lnk_link_memory.memory import Config, Memory
from lnk_link_memory.models import ModelError, choose
from lnk_link_memory.sockets import Hello, Welcome, address

log = logging.getLogger(__name__)


class Refusal(Exception):
    """Why a session is turned away, in words for the person reading its error."""


class GiveWay(Refusal):
    """The session's folder isn't shown to this engine: its sandbox was made before that agent's
    folder was. The engine ends, so the session starts one whose sandbox shows every folder now."""


class Engine:
    def __init__(self, path: Path, owner: str, linger: float = ENGINE_LINGER_SECONDS) -> None:
        self.path = path
        self.owner = owner
        self.linger = linger
        self._memories: dict[tuple[str, str], tuple[Memory, int]] = {}
        self._lock = threading.Lock()
        self._sessions = 0
        self._idle_since = time.monotonic()
        self._scope: anyio.CancelScope | None = None
        self._connections: set[socket.socket] = set()

    def run(self) -> int:
        lock = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return 0  # another engine of this owner is starting or running: sessions find it
        listener = self._listen()
        try:
            anyio.run(self._serve_all, listener)
        finally:
            listener.close()
            self.path.unlink(missing_ok=True)
            for memory, _ in self._memories.values():
                memory.close()
            os.close(lock)
        return 0

    def _listen(self) -> socket.socket:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.path.parent, 0o700)
        self.path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            with address(self.path) as where:
                listener.bind(where)
        finally:
            os.umask(old)
        listener.listen(64)
        listener.setblocking(False)
        return listener

    async def _serve_all(self, listener: socket.socket) -> None:
        async with anyio.create_task_group() as group:
            self._scope = group.cancel_scope
            group.start_soon(self._end_when_idle)
            group.start_soon(self._end_when_told)
            while True:
                await anyio.wait_readable(listener)
                try:
                    connection, _ = listener.accept()
                except BlockingIOError:
                    continue
                connection.setblocking(True)
                self._sessions += 1
                group.start_soon(self._session, connection)

    async def _end_when_told(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                self._end()
                return

    def _end(self) -> None:
        """End now: gone from the folder at once, and every session's socket shut, so no thread
        reading one holds the exit (and the owner's lock) until its session speaks again."""
        self.path.unlink(missing_ok=True)
        for connection in list(self._connections):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        assert self._scope is not None
        self._scope.cancel()

    async def _end_when_idle(self) -> None:
        while True:
            await anyio.sleep(0.25)
            if self._sessions == 0 and time.monotonic() - self._idle_since >= self.linger:
                self._end()
                return

    async def _session(self, connection: socket.socket) -> None:
        key: tuple[str, str] | None = None
        self._connections.add(connection)
        try:
            reader = connection.makefile("rb")
            writer = connection.makefile("wb", buffering=0)
            line = await anyio.to_thread.run_sync(reader.readline, 65536)
            if not line:
                return  # closed unsaid: one asking only who listens (SO_PEERCRED)
            try:
                self._same_user(connection)
                hello = Hello.model_validate_json(line)
                key, memory = await anyio.to_thread.run_sync(self._acquire, hello)
            except GiveWay as exc:
                log.warning("giving way: %s", exc)
                self.path.unlink(missing_ok=True)  # before the answer: the session's new engine listens here
                writer.write(Welcome(ok=False, error=str(exc), again=True).model_dump_json().encode() + b"\n")
                self._end()
                return
            except (Refusal, ModelError) as exc:
                writer.write(Welcome(ok=False, error=str(exc)).model_dump_json().encode() + b"\n")
                return
            except ValidationError:
                writer.write(
                    Welcome(ok=False, error="the session's hello isn't one").model_dump_json().encode() + b"\n"
                )
                return
            writer.write(Welcome(ok=True).model_dump_json().encode() + b"\n")
            await self._speak(memory, reader, writer)
        except Exception:
            log.exception("a session failed")
        finally:
            self._connections.discard(connection)
            connection.close()
            if key is not None:
                await anyio.to_thread.run_sync(self._release, key)
            self._sessions -= 1
            self._idle_since = time.monotonic()

    async def _speak(self, memory: Memory, reader: io.BufferedReader, writer: Any) -> None:
        server = mcp_server.build(memory)
        stdin = anyio.wrap_file(io.TextIOWrapper(reader, encoding="utf-8", errors="replace"))
        stdout = anyio.wrap_file(io.TextIOWrapper(writer, encoding="utf-8", write_through=True))
        async with stdio_server(stdin, stdout) as (read, write):
            # MCPServer serves stdio only as the process's own; a session's socket is served the same way.
            lowlevel = server._lowlevel_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    def _same_user(self, connection: socket.socket) -> None:
        creds = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", creds)
        if uid != os.getuid():
            raise Refusal("this memory engine serves another user's agents")

    def _acquire(self, hello: Hello) -> tuple[tuple[str, str], Memory]:
        with self._lock:
            return self._acquired(hello)

    def _acquired(self, hello: Hello) -> tuple[tuple[str, str], Memory]:
        if hello.owner != self.owner:
            raise Refusal(f"this memory engine serves {self.owner}'s agents, not {hello.owner}'s")
        folder, state = Path(hello.folder).absolute(), Path(hello.state).absolute()
        if not folder.is_dir():
            # Never index or write in its place: in a sandbox, that would be a folder of its own.
            raise GiveWay(f"this engine can't see the agent folder {folder}")
        key = (str(folder), str(state))
        if key in self._memories:
            memory, count = self._memories[key]
            self._memories[key] = (memory, count + 1)
            return key, memory
        notes = Path(hello.notes) if hello.notes else None
        config = Config(
            folder=Folder.agent(folder, notes),
            state=state,
            notes=notes,
            notes_limit=hello.notes_max,
            choice=choose(hello.embeddings, hello.model_server),
            label=hello.agent_id or str(folder),
        )
        memory = Memory(config).start()
        self._memories[key] = (memory, 1)
        return key, memory

    def _release(self, key: tuple[str, str]) -> None:
        with self._lock:
            memory, count = self._memories[key]
            if count > 1:
                self._memories[key] = (memory, count - 1)
                return
            del self._memories[key]
        memory.close()


def main(path: Path, owner: str) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    allocator.steady()
    code = Engine(path, owner).run()
    sys.stderr.flush()
    os._exit(code)  # worker threads blocked on a closed session's socket don't hold the exit
