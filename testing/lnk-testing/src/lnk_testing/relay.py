"""A relay on the loopback between a client and a server, for striking at an exact point of a stream.

    relay = Relay(harness_port).start()
    relay.after(b"data: [DONE]", lambda: os.kill(harness_pid, signal.SIGKILL))
    ... point the bridge at relay.port ...

Bytes pass unchanged both ways, each client connection on a server connection of its own, so
the proof and the key go through as they would directly. Three strikes:

- `after(marker, action)` runs `action` once, as soon as the server's bytes holding `marker`
  were handed on to the client: a harness killed the moment the bridge read its answer's end.
- `hold(marker)`: the next connection whose request holds `marker` gets nothing more from the
  server; `cut()` then closes it. The server had the request and the client saw no byte of the
  answer: a connection broken before any answer, with the harness having kept the message.
- `end()`: the relay is gone, as a sandbox's relay killed: nothing listens on its port any more,
  then the held connections close.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field

_CHUNK = 65536


@dataclass
class _Connection:
    writers: list[asyncio.StreamWriter] = field(default_factory=list)
    held: bool = False


class Relay:
    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.port = 0
        self._after: tuple[bytes, Callable[[], None]] | None = None
        self._hold: bytes | None = None
        self._held: list[_Connection] = []
        self.struck = threading.Event()
        """Set once `after`'s action ran."""
        self.holding = threading.Event()
        """Set once a connection is held."""
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def start(self) -> Relay:
        self._thread.start()
        serving = asyncio.start_server(self._serve, "127.0.0.1", 0)
        self._server = asyncio.run_coroutine_threadsafe(serving, self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def after(self, marker: bytes, action: Callable[[], None]) -> None:
        """Run `action` once, right after the server's bytes holding `marker` went to the client."""
        self.struck.clear()
        self._after = (marker, action)

    def hold(self, marker: bytes) -> None:
        """Hold the next connection whose request holds `marker`: the server's answer stays here."""
        self.holding.clear()
        self._hold = marker

    def cut(self) -> None:
        """Close the held connections, both ways."""
        self._loop.call_soon_threadsafe(self._close_held)

    def end(self) -> None:
        """Stop listening, then close the held connections, both ways: whoever finds a connection
        closed finds nothing to connect to either."""
        done = threading.Event()

        def close() -> None:
            if self._server is not None:
                self._server.close()  # its listening sockets close now, before any connection
            self._close_held()
            done.set()

        self._loop.call_soon_threadsafe(close)
        done.wait(10)

    def _close_held(self) -> None:
        for connection in self._held:
            for writer in connection.writers:
                writer.close()
        self._held.clear()

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            client_writer.close()
            return
        connection = _Connection(writers=[client_writer, server_writer])
        upward = asyncio.create_task(self._up(client_reader, server_writer, connection))
        downward = asyncio.create_task(self._down(server_reader, client_writer, connection))
        await asyncio.wait({upward, downward}, return_when=asyncio.FIRST_COMPLETED)
        for task in (upward, downward):
            task.cancel()
        for writer in connection.writers:
            writer.close()

    async def _up(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: _Connection) -> None:
        with suppress(ConnectionError, OSError):
            while data := await reader.read(_CHUNK):
                if self._hold is not None and self._hold in data:
                    self._hold = None
                    connection.held = True
                    self._held.append(connection)
                    self.holding.set()
                writer.write(data)
                await writer.drain()

    async def _down(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: _Connection) -> None:
        tail = b""
        with suppress(ConnectionError, OSError):
            while data := await reader.read(_CHUNK):
                if connection.held:
                    continue
                writer.write(data)
                await writer.drain()
                if self._after is not None:
                    marker, action = self._after
                    seen, tail = tail + data, (tail + data)[-len(marker) :]
                    if marker in seen:
                        self._after = None
                        action()
                        self.struck.set()
