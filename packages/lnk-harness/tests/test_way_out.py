"""A broken model connection is the sandbox ending only when its proxy is gone for good: nothing
listens where it was, or what listens closes without a word. A proxy that answers anything, or
is only slow, stands, and the model's failure is the answer (way_out.py)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from lnk_harness import way_out

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def listening(handle: Handler) -> AsyncIterator[dict[str, str]]:
    """A server on the loopback, as the sandbox's environment names its proxy."""
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield {way_out.ENV_PROXY: f"http://127.0.0.1:{port}"}


async def refuses(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """As Link's proxy answers a request to itself that isn't a tool's."""
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    await writer.drain()
    writer.close()


async def hangs_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """As the sandbox's relay does once the proxy outside is gone: it takes the connection, can't
    pass it on, and closes it."""
    writer.close()


async def says_nothing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await asyncio.sleep(5)
    writer.close()


def nothing_listens() -> dict[str, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return {way_out.ENV_PROXY: f"http://127.0.0.1:{port}"}


def gone_behind(handle: Handler, timeout: float = way_out.ASK_WITHIN) -> bool:
    """What the harness finds, asking a proxy that answers as `handle` does."""

    async def ask() -> bool:
        async with listening(handle) as env:
            return await way_out.gone(env, timeout)

    return asyncio.run(ask())


def test_a_proxy_that_answers_stands() -> None:
    assert gone_behind(refuses) is False


def test_a_proxy_nothing_listens_for_is_gone() -> None:
    assert asyncio.run(way_out.gone(nothing_listens())) is True


def test_a_proxy_that_closes_unanswered_is_gone() -> None:
    assert gone_behind(hangs_up) is True


def test_a_slow_proxy_is_taken_as_standing() -> None:
    assert gone_behind(says_nothing, timeout=0.2) is False


def test_without_a_sandbox_nothing_is_gone() -> None:
    assert asyncio.run(way_out.gone({})) is False
