"""The agent's proxy: the only way out of its sandbox, outside it, on unix sockets the relays reach.

It speaks HTTP CONNECT (a tunnel to host:port) and plain HTTP (absolute-form requests). Every
host a request names is parsed by one grammar (`hosts.py`; anything else is answered 400), that
parsed host is judged by the agent's rules before it is resolved, every address it resolves to
is judged again, and the connection is logged under the same host. Plain HTTP to a hosted model
provider it knows goes on over TLS, the provider's certificate verified for its real name
whatever address it answered at, with the agent's key added, so the harness never holds the key
and the key never travels in the clear. Requests to the proxy itself under /_link/tools/ go to
the core's tool bridge on its unix socket. Bodies stream through; none is ever held whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import json
import os
import socket
import ssl
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import SplitResult, urlsplit

from link_plugin.keys import KeyStore
from link_plugin.providers import BY_HOST, UPSTREAM_ENV, Provider
from link_plugin.sandbox_terms import TOOLS_PATH
from link_plugin.waits import within
from lnk_sandbox.hosts import IP, BadHost, Host, parse_authority, parse_host, parse_http_url
from lnk_sandbox.http import MAX_HEAD, BadMessage, Head, Message, Responses, answer, read_request
from lnk_sandbox.rules import Rules
from lnk_sandbox.sockets import unix_address
from lnk_sandbox.trust import Trust

if TYPE_CHECKING:
    from lnk_sandbox.relay import Splicer

CHUNK = 256 * 1024
TIMEOUT = 30.0
_TOOL_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class Network:
    """How the proxy resolves names and opens connections: the machine's own, unless a test stands in."""

    async def resolve(self, name: str, port: int) -> list[IP]:
        loop = asyncio.get_running_loop()
        try:
            # Bytes: the name is already its A-label, and no codec gets a second say in what it is.
            infos = await loop.getaddrinfo(name.encode("ascii"), port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise Refused(502, f"{name} can't be resolved ({exc.strerror})") from None
        found = []
        for info in infos:
            with contextlib.suppress(ValueError):
                found.append(ipaddress.ip_address(str(info[4][0]).partition("%")[0]))
        return found

    async def connect(self, host: str, port: int) -> Streams:
        """A plain TCP connection; TLS, where it is spoken, is the proxy's own (`Proxy._secure`)."""
        return await asyncio.open_connection(host, port, limit=MAX_HEAD)


class ConnectionLog:
    """Each connection, as one JSON line: host, port, and allowed or why refused."""

    def __init__(self, path: Path | None, echo: TextIO | None = None) -> None:
        self.path = path
        self.echo = echo
        self._lock = threading.Lock()

    def record(self, kind: str, host: str, port: int, refused: str | None = None, **more: Any) -> None:
        entry = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "kind": kind,
            "host": host,
            "port": port,
            "allowed": refused is None,
            **({"reason": refused} if refused else {}),
            **more,
        }
        with self._lock:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a") as handle:
                    handle.write(json.dumps(entry) + "\n")
            if self.echo is not None and refused:
                print(f"lnk-sandbox: refused {kind} {host}:{port}: {refused}", file=self.echo, flush=True)


@dataclass
class ProxySettings:
    rules: Rules
    port: int
    """Its own port as the sandbox sees it, so a request to the proxy itself is known as one."""
    log: ConnectionLog
    tools_socket: Path | None = None
    tools: frozenset[str] | None = None
    """Tools passed on to the bridge; None: every one."""
    keys: KeyStore | None = None
    """Where the agent's model keys are; None: no key is added (the harness holds its own)."""
    upstreams: Mapping[str, str] = field(default_factory=dict)
    """The proxy's environment, for LNK_UPSTREAM_<PROVIDER> and LNK_UPSTREAM_CA."""
    network: Network = field(default_factory=Network)
    trust: Trust | None = None
    """The authorities trusted for providers, read before the sandbox started; None: read now."""


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, first: bytes = b"") -> None:
    """Copy one direction until it ends, then end that direction of the other side. At most one
    chunk is in hand at a time: a writer that can't keep up holds the reader back."""
    try:
        data = first or await reader.read(CHUNK)
        while data:
            writer.write(data)
            await writer.drain()
            data = await reader.read(CHUNK)
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError, ssl.SSLError):
        writer.close()


async def tunnel(a: Streams, b: Streams, first: bytes = b"") -> None:
    """Both directions of two connections; `first` is what `a` already sent. Between two plain
    sockets the kernel copies (`relay.Splicer`); anything else is copied here, a chunk at a time."""
    splicer = _splicer()
    if splicer is None or not (_plain(a[1]) and _plain(b[1])):
        await asyncio.gather(pump(a[0], b[1], first), pump(b[0], a[1]))
        return
    try:
        # What each stream already read goes over first, and whole: then nothing is left in Python's hands.
        taken = (first + await _taken(a), await _taken(b))
        for (_, writer), data in zip((b, a), taken, strict=True):
            writer.transport.set_write_buffer_limits(0)
            writer.write(data)
            await writer.drain()
        sockets = _detached(a[1], b[1])
    except (ConnectionError, OSError):
        close(a[1])
        close(b[1])
        return
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def settle() -> None:
        if not done.done():
            done.set_result(None)

    def ended() -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed first: nobody is waiting
            loop.call_soon_threadsafe(settle)

    pair = splicer.join(sockets[0], sockets[1], ended)
    try:
        await done
    finally:
        splicer.end(pair)


@functools.cache
def _splicer() -> Splicer | None:
    """This process's splicer, started when first needed; None where the kernel has no splice(2)."""
    if sys.platform != "linux":
        return None
    from lnk_sandbox.relay import Splicer

    return Splicer().start()


def _plain(writer: asyncio.StreamWriter) -> bool:
    """Whether a stream is a socket's own bytes (no TLS of the proxy's between)."""
    sock = writer.get_extra_info("socket")
    plain = writer.get_extra_info("sslcontext") is None and isinstance(writer.transport, asyncio.Transport)
    return plain and sock is not None and sock.type == socket.SOCK_STREAM


async def _taken(streams: Streams) -> bytes:
    """Stop a stream reading, and take what it read and no one has yet."""
    reader, writer = streams
    transport = writer.transport
    assert isinstance(transport, asyncio.Transport)  # as `_plain` found
    transport.pause_reading()
    reader.feed_eof()
    data = await reader.read()  # never waits: the end is fed, so it returns what is buffered
    transport.pause_reading()  # reading what it buffered may have resumed it
    return data


def _detached(a: asyncio.StreamWriter, b: asyncio.StreamWriter) -> tuple[socket.socket, socket.socket]:
    """Both streams' sockets, as sockets of their own, the streams closed without ending the connections."""
    if a.transport.is_closing() or b.transport.is_closing():
        raise ConnectionResetError("the connection ended")
    first = socket.socket(fileno=os.dup(a.get_extra_info("socket").fileno()))
    try:
        second = socket.socket(fileno=os.dup(b.get_extra_info("socket").fileno()))
    except OSError:
        first.close()
        raise
    a.transport.abort()
    b.transport.abort()
    return first, second


def close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()


async def exchange(client: Streams, upstream: Streams, request: Message, sent: Head, host: str) -> None:
    """Send one request on, stream its body up and the response down, then end both connections.
    A head goes in one write with the body's first bytes, so no peer waits on half a message."""
    sending = asyncio.ensure_future(pump(client[0], upstream[1], sent.closing().encode() + request.rest))
    try:
        responses = Responses(upstream[0], sent)
        while True:
            try:
                response = await responses.next()
            except BadMessage as exc:
                raise Refused(502, f"lnk's proxy can't read {host}'s answer: {exc}") from None
            if response is None:
                client[1].write(answer(502, "Bad Gateway", f"lnk's proxy: {host} closed without answering\n"))
                return
            if 100 <= response.head.status < 200:
                client[1].write(response.head.encode())
                continue
            break
        await pump(upstream[0], client[1], response.head.closing().encode() + response.rest)
    finally:
        sending.cancel()
        close(upstream[1])


class Proxy:
    def __init__(self, settings: ProxySettings) -> None:
        self.settings = settings
        self.trust = settings.trust or Trust(settings.upstreams)

    @property
    def rules(self) -> Rules:
        return self.settings.rules

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client = (reader, writer)
        try:
            request = await within(read_request(reader), TIMEOUT)
            if request is None:
                return
            await self._route(client, request)
        except (BadMessage, BadHost) as exc:
            writer.write(answer(400, "Bad Request", f"lnk's proxy can't read this request: {exc}\n"))
        except Refused as exc:
            writer.write(answer(exc.status, "Forbidden" if exc.status == 403 else "Bad Gateway", f"{exc.reason}\n"))
        except (TimeoutError, ConnectionError, OSError, ssl.SSLError):
            pass
        except asyncio.CancelledError:
            # The sandbox ended and the proxy with it: this connection's task is the last to know.
            return
        except Exception as exc:  # one connection's failure never takes the proxy down
            self.settings.log.record("error", "proxy", self.settings.port, f"{type(exc).__name__}: {exc}")
            writer.write(answer(502, "Bad Gateway", f"lnk's proxy failed: {type(exc).__name__}\n"))
        finally:
            # A closing stream (a tunnel handed on, a copy that failed) sends what it holds as it closes.
            if not writer.transport.is_closing():
                with contextlib.suppress(Exception):
                    await writer.drain()
            close(writer)

    async def _route(self, client: Streams, request: Message) -> None:
        head = request.head
        if head.method == "CONNECT":
            host, port = parse_authority(head.target)
            upstream = await self._open("connect", host, port)
            client[1].write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await tunnel(client, upstream, request.rest)
            return
        if head.target.startswith("/"):
            await self._own(client, request, head.target)
            return
        host, port, target = parse_http_url(head.target)
        if port == self.settings.port and host.names_loopback:
            await self._own(client, request, target)
        elif port == 80 and host.address is None and host.text in BY_HOST:
            await self._provider(client, request, BY_HOST[host.text], target)
        else:
            upstream = await self._open("http", host, port)
            sent = Head((head.method, target, head.start[2]), head.headers)
            authority = host.bracketed if port == 80 else host.authority(port)
            await exchange(client, upstream, request, sent.with_header("Host", authority), host.text)

    async def _open(self, kind: str, host: Host, port: int, *, tls: Provider | None = None, **more: Any) -> Streams:
        """Judge (host, port), resolve it, judge each address, connect to an allowed one (over TLS to
        `tls`'s name when given), and log the outcome under the host as parsed."""
        addresses: list[IP] = []
        reason = self.rules.before(host, port)
        if reason is None:
            try:
                addresses = await self._resolve(host, port)
            except Refused as exc:
                self.settings.log.record(kind, host.text, port, exc.reason, **more)
                raise
            reasons = [self.rules.after(address, port) for address in addresses] or [f"{host} resolves to no address"]
            reason = next((r for r in reasons if r is not None), None)
        if reason is not None:
            self.settings.log.record(kind, host.text, port, reason, **more)
            raise Refused(403, f"lnk's proxy refused {host.authority(port)}: {reason}")
        try:
            upstream = await self._connect(host, port, addresses)
            if tls is not None:
                upstream = await self._secure(upstream, host.text, tls)
        except Refused as exc:
            self.settings.log.record(kind, host.text, port, exc.reason, **more)
            raise
        self.settings.log.record(kind, host.text, port, **more)
        return upstream

    async def _resolve(self, host: Host, port: int) -> list[IP]:
        """An address stands for itself; only a name is looked up."""
        if host.address is not None:
            return [host.address]
        return await self.settings.network.resolve(host.text, port)

    async def _connect(self, host: Host, port: int, addresses: list[IP]) -> Streams:
        last: Exception | None = None
        for address in addresses:
            try:
                return await within(self.settings.network.connect(str(address), port), TIMEOUT)
            except (OSError, TimeoutError) as exc:
                last = exc
        raise Refused(502, f"lnk's proxy couldn't reach {host.authority(port)} ({last})")

    async def _secure(self, upstream: Streams, name: str, provider: Provider) -> Streams:
        """TLS over a connection made, the certificate verified for `name` (sent as SNI too), whatever
        address answered: a wrong authority or a wrong name ends the connection before any byte of
        the request, key and all, is sent."""
        try:
            await within(
                upstream[1].start_tls(self.trust.context(), server_hostname=name, ssl_handshake_timeout=TIMEOUT),
                TIMEOUT,
            )
        except ssl.SSLCertVerificationError as exc:
            close(upstream[1])
            why = f"its certificate can't be trusted ({exc.verify_message})"
            raise Refused(502, f"lnk's proxy refused {name} ({provider.name}): {why}") from None
        except (ssl.SSLError, OSError, TimeoutError) as exc:
            close(upstream[1])
            raise Refused(502, f"lnk's proxy couldn't speak TLS with {name} ({provider.name}): {exc}") from None
        return upstream

    async def _own(self, client: Streams, request: Message, target: str) -> None:
        """A request to the proxy itself: the tools under /_link/tools/<tool>/..., nothing else."""
        if not target.startswith(TOOLS_PATH):
            raise Refused(403, f"lnk's proxy serves only {TOOLS_PATH}<tool>/mcp here")
        tool = target[len(TOOLS_PATH) :].split("/", 1)[0].split("?", 1)[0]
        if not tool or tool in (".", "..") or not set(tool) <= _TOOL_NAME:
            raise Refused(403, f"lnk's proxy: {tool!r} is not a tool's name")
        allowed = self.settings.tools is None or tool in self.settings.tools
        socket_path = self.settings.tools_socket
        reason = None if allowed else f"the tool {tool} isn't one of this agent's"
        if reason is None and socket_path is None:
            reason = "no tools are served to this sandbox"
        self.settings.log.record("tools", "proxy", self.settings.port, reason, tool=tool)
        if reason is not None or socket_path is None:
            raise Refused(403, f"lnk's proxy refused the tool {tool}: {reason}")
        try:
            with unix_address(socket_path) as address:
                upstream = await asyncio.open_unix_connection(address, limit=MAX_HEAD)
        except OSError:
            raise Refused(502, "lnk's proxy: the agent's tool bridge isn't running") from None
        head = request.head
        await exchange(client, upstream, request, Head((head.method, target, head.start[2]), head.headers), tool)

    async def _provider(self, client: Streams, request: Message, provider: Provider, target: str) -> None:
        """Plain HTTP to a hosted model: on over TLS, with the agent's key added when it is wired."""
        key = self.settings.keys.get(provider.name) if self.settings.keys is not None else None
        more = {"provider": provider.name, "key": key is not None}
        host = parse_host(provider.host)
        override = self.settings.upstreams.get(UPSTREAM_ENV.format(name=provider.name.upper()))
        if override:
            reason = self.rules.before(host, 443)
            self.settings.log.record("http", host.text, 80, reason, **more, upstream=override)
            if reason is not None:
                raise Refused(403, f"lnk's proxy refused {host}: {reason}")
            url = urlsplit(override)
            upstream = await self._upstream(url, provider)
            host_header = url.netloc
            if url.path.rstrip("/"):
                target = url.path.rstrip("/") + target.removeprefix(provider.base_path)
        else:
            upstream = await self._open("http", host, 443, tls=provider, **more)
            host_header = host.text
        head = request.head
        sent = Head((head.method, target, head.start[2]), head.headers).with_header("Host", host_header)
        if self.settings.keys is not None:
            sent = sent.without(provider.key_header)
            if key is not None:
                for name, value in provider.key_headers(key).items():
                    sent = sent.with_header(name, value)
        await exchange(client, upstream, request, sent, host.text)

    async def _upstream(self, url: SplitResult, provider: Provider) -> Streams:
        """A provider's stand-in named by LNK_UPSTREAM_<PROVIDER>: set outside every sandbox, so trusted."""
        if url.scheme not in ("http", "https") or not url.hostname:
            raise Refused(502, f"lnk's proxy: {url.geturl()!r} is not an http(s) address")
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            upstream = await within(self.settings.network.connect(url.hostname, port), TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise Refused(502, f"lnk's proxy couldn't reach {url.netloc} ({exc})") from None
        return await self._secure(upstream, url.hostname, provider) if url.scheme == "https" else upstream


async def forward(port: int, log: ConnectionLog, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A connection from inside to one loopback port of this machine (a local model server's)."""
    try:
        upstream = await asyncio.open_connection("127.0.0.1", port, limit=MAX_HEAD)
    except OSError as exc:
        log.record("forward", "127.0.0.1", port, f"nothing answers there ({exc.strerror})")
        close(writer)
        return
    log.record("forward", "127.0.0.1", port)
    try:
        await tunnel((reader, writer), upstream)
    except asyncio.CancelledError:
        return
    finally:
        close(writer)
        close(upstream[1])


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Served:
    """The proxy and port forwards on an event loop of their own, in a thread, while a sandbox runs."""

    def __init__(self) -> None:
        self._tcp: list[tuple[str, int, Handler]] = []
        self._bound: list[tuple[socket.socket, Handler]] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="lnk-proxy", daemon=True)
        self._servers: list[asyncio.Server] = []

    def tcp(self, host: str, port: int, handler: Handler) -> None:
        self._tcp.append((host, port, handler))

    def listening(self, sock: socket.socket, handler: Handler) -> None:
        """A socket bound and listening already (`standby.Standby`): connections waiting on it are
        answered too."""
        self._bound.append((sock, handler))

    async def _bind(self) -> list[asyncio.Server]:
        servers = []
        for host, port, handler in self._tcp:
            servers.append(await asyncio.start_server(handler, host, port, limit=MAX_HEAD))
        for sock, handler in self._bound:
            servers.append(await asyncio.start_unix_server(handler, sock=sock, limit=MAX_HEAD))
        return servers

    @property
    def ports(self) -> list[int]:
        """The TCP ports bound, in order (a port asked as 0 gets one)."""
        bound = [server.sockets[0] for server in self._servers]
        return [int(sock.getsockname()[1]) for sock in bound if sock.family != socket.AF_UNIX]

    def start(self) -> Served:
        self._thread.start()
        self._servers = asyncio.run_coroutine_threadsafe(self._bind(), self._loop).result(timeout=10)
        return self

    def stop(self) -> None:
        async def _close() -> None:
            for server in self._servers:
                server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(_close(), self._loop).result(timeout=5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        self._loop.close()

    def __enter__(self) -> Served:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
