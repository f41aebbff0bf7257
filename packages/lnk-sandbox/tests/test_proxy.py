"""The proxy as a client meets it: one request per connection, bodies and streams passed through,
bad requests answered, the tool bridge missing said so. Served on the loopback, without a sandbox."""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from helpers import Echo, Internet, Peak, Sink, Website, Wiretap, exchange, held_tcp
from lnk_sandbox.http import MAX_HEAD
from lnk_sandbox.proxy import ConnectionLog, Proxy, ProxySettings, Served
from lnk_sandbox.rules import Rules

from link_conformance.provider import Reply, StandInProvider
from link_plugin.keys import KeyStore

KEY = "sk-proxy-test"


@pytest.fixture
def site() -> Iterator[Website]:
    found = Website()
    yield found
    found.close()


@pytest.fixture
def provider() -> Iterator[StandInProvider]:
    with StandInProvider(key=KEY) as found:
        yield found


@pytest.fixture
def proxy(tmp_path: Path, site: Website, provider: StandInProvider) -> Iterator[str]:
    keys = KeyStore(tmp_path / "keys.json")
    keys.set("openai", KEY)
    settings = ProxySettings(
        rules=Rules(),
        port=3128,
        log=ConnectionLog(tmp_path / "proxy.log"),
        tools_socket=tmp_path / "missing.sock",
        keys=keys,
        upstreams={"LNK_UPSTREAM_OPENAI": provider.origin},
        network=Internet({"site.example": "93.184.215.14"}, {("93.184.215.14", 80): site.port}),
    )
    served = Served()
    served.tcp("127.0.0.1", 0, Proxy(settings).handle)
    with served:
        yield f"127.0.0.1:{served.ports[0]}"


def test_a_request_is_answered_once_and_the_connection_closed(proxy: str) -> None:
    two = b"GET http://site.example/a HTTP/1.1\r\nHost: site.example\r\n\r\nGET http://site.example/b HTTP/1.1\r\n\r\n"
    received = exchange(proxy, two)
    assert received.count(b"HTTP/1.") == 1 and b"Connection: close" in received
    assert received.endswith(b"page for site.example at /a")


@pytest.mark.parametrize(
    "data",
    [
        b"NONSENSE\r\n\r\n",
        b"GET http://site.example/ HTTP/1.1\r\n folded: header\r\n\r\n",
        b"CONNECT nowhere HTTP/1.1\r\n\r\n",
        b"GET http://site.example/ HTTP/1.1\r\n\r\n",
        b"GET http://site.example/\0 HTTP/1.1\r\nHost: site.example\r\n\r\n",
        b"GET http://site.example/ HTTP/1.1\r\nHost: site.example\r\nX: a\0b\r\n\r\n",
        b"POST http://site.example/ HTTP/1.1\r\nHost: site.example\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
        b"POST http://site.example/ HTTP/1.1\r\nHost: site.example\r\nContent-Length: 3\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n",
        b"POST http://site.example/ HTTP/1.1\r\nHost: site.example\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
    ],
)
def test_a_request_it_cant_read_is_answered_400(proxy: str, data: bytes) -> None:
    assert exchange(proxy, data).startswith(b"HTTP/1.1 400")


SMUGGLED = b"GET http://site.example/inner HTTP/1.1\r\nHost: site.example\r\n\r\n"


@pytest.mark.parametrize(
    ("data", "why"),
    [
        pytest.param(
            b"POST http://site.example/ HTTP/1.1\r\nHost: site.example\r\nContent-Length: 0\r\n"
            b"Content-Length: 45\r\n\r\n" + SMUGGLED,
            b"Content-Length",
            id="two-lengths",
        ),
        pytest.param(
            b"POST http://site.example/ HTTP/1.1\r\nHost: site.example\r\nContent-Length: 4\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + SMUGGLED,
            b"Content-Length and Transfer-Encoding",
            id="length-and-chunked",
        ),
        pytest.param(
            b"POST http://site.example/ HTTP/1.1\r\nHost: site.example\r\nTransfer-Encoding: chunked\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + SMUGGLED,
            b"Transfer-Encoding",
            id="two-codings",
        ),
        pytest.param(
            b"POST http://site.example/ HTTP/1.1\r\nHost: site.example\r\nTransfer-Encoding : chunked\r\n\r\n",
            b"header line",
            id="space-before-colon",
        ),
        pytest.param(
            b"POST http://site.example/ HTTP/1.1\r\nHost: site.example\r\nX-Note: a\r\n"
            b" Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + SMUGGLED,
            b"obs-fold",
            id="obs-fold",
        ),
        pytest.param(
            b"GET http://site.example/ HTTP/1.1\r\nHost: site.example\r\nX-Note: a\r\n\tb\r\n\r\n",
            b"obs-fold",
            id="obs-fold-tab",
        ),
        pytest.param(b"GET http://site.example/ HTTP/1.1\nHost: site.example\n\n", b"CRLF", id="bare-lf"),
        pytest.param(
            b"GET http://site.example/ HTTP/1.1\r\nHost: site.example\r\n\n" + SMUGGLED,
            b"CRLF",
            id="bare-lf-ending-the-head",
        ),
        pytest.param(
            b"GET http://site.example/ HTTP/1.1\r\nHost: site.example\nX-Note: a\r\n\r\n", b"CRLF", id="bare-lf-mid"
        ),
    ],
)
def test_a_head_two_parsers_could_read_two_ways_is_refused(proxy: str, site: Website, data: bytes, why: bytes) -> None:
    """Request smuggling: a head a server behind the proxy might frame otherwise than the proxy did
    is answered 400, saying why, and nothing of it reaches the site."""
    received = exchange(proxy, data)
    assert received.startswith(b"HTTP/1.1 400") and why in received, received
    assert site.authorizations == [], "the site was asked"


def test_a_length_said_twice_alike_goes_on_once(tmp_path: Path, site: Website) -> None:
    """The same Content-Length twice is one length (RFC 9110); what goes on is the head written
    again, so the site reads it once, never the bytes that came."""
    tap = Wiretap(site.port)
    settings = ProxySettings(
        rules=Rules(),
        port=3128,
        log=ConnectionLog(tmp_path / "proxy.log"),
        network=Internet({"site.example": "93.184.215.14"}, {("93.184.215.14", 80): tap.port}),
    )
    served = Served()
    served.tcp("127.0.0.1", 0, Proxy(settings).handle)
    try:
        with served:
            data = b"GET http://site.example/twice HTTP/1.1\r\nHost: site.example\r\nContent-Length: 0\r\n"
            received = exchange(f"127.0.0.1:{served.ports[0]}", data + b"Content-Length: 0\r\n\r\n")
    finally:
        tap.close()
    assert received.startswith(b"HTTP/1.0 200") and received.endswith(b"at /twice")
    assert bytes(tap.upstream).lower().count(b"content-length:") == 1


def test_a_head_too_long_is_answered_400(proxy: str) -> None:
    data = b"GET http://site.example/ HTTP/1.1\r\nX: " + b"a" * (MAX_HEAD + 10) + b"\r\n\r\n"
    assert exchange(proxy, data).startswith(b"HTTP/1.1 400")


def test_https_through_a_plain_request_is_refused(proxy: str) -> None:
    assert exchange(proxy, b"GET https://site.example/ HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 400")


def test_the_proxy_itself_serves_only_tools(proxy: str) -> None:
    assert exchange(proxy, b"GET / HTTP/1.1\r\nHost: proxy\r\n\r\n").startswith(b"HTTP/1.1 403")
    missing = exchange(proxy, b"POST /_link/tools/memory-x/mcp HTTP/1.1\r\nHost: proxy\r\nContent-Length: 0\r\n\r\n")
    assert missing.startswith(b"HTTP/1.1 502") and b"tool bridge isn't running" in missing


def test_a_models_streamed_answer_comes_through_as_it_is_written(proxy: str, provider: StandInProvider) -> None:
    provider.script(Reply(text="one two three four", chunks=4))
    body = {"model": "gpt-6-luna", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    pieces = []
    with (
        httpx.Client(proxy=f"http://{proxy}", timeout=10) as client,
        client.stream("POST", "http://api.openai.com/v1/chat/completions", json=body) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: {"):
                delta = json.loads(line[6:])["choices"][0]["delta"]
                pieces.append(delta.get("content") or "")
    assert "".join(pieces) == "one two three four"
    assert provider.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_a_large_body_goes_up_whole(proxy: str, provider: StandInProvider) -> None:
    text = "x" * 3_000_000
    body = {"model": "gpt-6-luna", "messages": [{"role": "user", "content": text}]}
    with httpx.Client(proxy=f"http://{proxy}", timeout=30) as client:
        response = client.post(
            "http://api.openai.com/v1/chat/completions", json=body, headers={"Expect": "100-continue"}
        )
    assert response.status_code == 200
    assert provider.requests[0].json["messages"][0]["content"] == text


# --- tunnels: the kernel copies, nothing is lost, Nagle is off ------------------------------------

ECHO_AT = "93.184.215.50"
TUNNEL = b"CONNECT echo.example:443 HTTP/1.1\r\nHost: echo.example:443\r\n\r\n"
ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"


@contextlib.contextmanager
def tunneling(tmp_path: Path, echo: Echo) -> Iterator[tuple[str, Served]]:
    """A proxy whose echo.example:443 is `echo`."""
    settings = ProxySettings(
        rules=Rules(),
        port=3128,
        log=ConnectionLog(tmp_path / "proxy.log"),
        network=Internet({"echo.example": ECHO_AT}, {(ECHO_AT, 443): echo.port}),
    )
    served = Served()
    served.tcp("127.0.0.1", 0, Proxy(settings).handle)
    with served:
        yield f"127.0.0.1:{served.ports[0]}", served


def opened(proxy: str, first: bytes = b"") -> socket.socket:
    """A tunnel to echo.example, `first` sent in the same write as the CONNECT."""
    host, _, port = proxy.partition(":")
    connection = socket.create_connection((host, int(port)), timeout=10)
    connection.sendall(TUNNEL + first)
    answer = b""
    while not answer.endswith(b"\r\n\r\n"):
        answer += connection.recv(1)
    assert answer == ESTABLISHED
    return connection


def test_a_tunnel_passes_what_came_with_the_connect_first_and_each_end_on(tmp_path: Path, echo: Echo) -> None:
    body = os.urandom(MEGABYTE) * 8
    with tunneling(tmp_path, echo) as (proxy, _), opened(proxy, b"early ") as connection:
        connection.sendall(body)
        connection.shutdown(socket.SHUT_WR)
        received = b""
        while data := connection.recv(MEGABYTE):
            received += data
    assert received == b"early " + body + b"after your end"


def test_every_tcp_socket_of_a_tunnel_says_nodelay(tmp_path: Path, echo: Echo) -> None:
    """Bytes are passed on as they come: Nagle would hold a second small write 40 ms behind the first."""
    with tunneling(tmp_path, echo) as (proxy, _), opened(proxy) as connection:
        connection.sendall(b"ping")
        assert connection.recv(16) == b"ping"
        port, mine = int(proxy.rpartition(":")[2]), connection.getsockname()[1]
        held = {s for s in held_tcp() if (s.local, s.peer) == (port, mine) or s.peer == echo.port}
    assert len(held) == 2, held  # the connection from inside, the one to echo.example
    assert all(s.nodelay for s in held), held


def test_a_tunnel_ends_with_the_proxy(tmp_path: Path, echo: Echo) -> None:
    with tunneling(tmp_path, echo) as (proxy, served), opened(proxy) as connection:
        connection.sendall(b"ping")
        assert connection.recv(16) == b"ping"
        served.stop()
        with contextlib.suppress(ConnectionResetError):
            assert connection.recv(16) == b""


# --- bodies stream through; none is held ---------------------------------------------------------

MEGABYTE = 1 << 20
CHUNKED = b"Transfer-Encoding: chunked\r\n\r\n"
UPLOAD = b"POST http://sink.example/upload HTTP/1.1\r\nHost: sink.example\r\n" + CHUNKED
TOOL_UPLOAD = b"POST /_link/tools/memory-x/mcp HTTP/1.1\r\nHost: proxy\r\n" + CHUNKED
TUNNEL_UPLOAD = b"CONNECT sink.example:80 HTTP/1.1\r\nHost: sink.example:80\r\n\r\n"


@contextlib.contextmanager
def sunk(tmp_path: Path, *, reading: bool) -> Iterator[str]:
    """A proxy whose plain-HTTP upstream (sink.example) and tool bridge are sinks."""
    web, bridge = Sink(reading=reading), Sink(tmp_path / "tools.sock", reading=reading)
    settings = ProxySettings(
        rules=Rules(),
        port=3128,
        log=ConnectionLog(tmp_path / "proxy.log"),
        tools_socket=tmp_path / "tools.sock",
        network=Internet({"sink.example": "93.184.215.40"}, {("93.184.215.40", 80): web.port}),
    )
    served = Served()
    served.tcp("127.0.0.1", 0, Proxy(settings).handle)
    try:
        with served:
            yield f"127.0.0.1:{served.ports[0]}"
    finally:
        web.close()
        bridge.close()


def upload(proxy: str, head: bytes, megabytes: int) -> bytes:
    """A chunked body of `megabytes`, with no length said, then what came back."""
    host, _, port = proxy.partition(":")
    chunk = b"%x\r\n%s\r\n" % (MEGABYTE, b"x" * MEGABYTE)
    with socket.create_connection((host, int(port)), timeout=60) as connection:
        connection.sendall(head)
        for _ in range(megabytes):
            connection.sendall(chunk)
        connection.sendall(b"0\r\n\r\n")
        connection.shutdown(socket.SHUT_WR)
        received = b""
        while data := connection.recv(65536):
            received += data
    return received


@pytest.mark.parametrize("head", [UPLOAD, TOOL_UPLOAD, TUNNEL_UPLOAD], ids=["plain-http", "tools", "tunnel"])
def test_a_200_mb_body_without_a_length_goes_through_without_growing_the_proxy(tmp_path: Path, head: bytes) -> None:
    with sunk(tmp_path, reading=True) as proxy, Peak() as peak:
        received = upload(proxy, head, 200)
    assert received.startswith(b"HTTP/1.1 200"), received[:200]
    assert int(received.rpartition(b"\r\n\r\n")[2]) > 200 * MEGABYTE
    assert peak.growth < 32 * MEGABYTE, f"the proxy grew by {peak.growth / MEGABYTE:.0f} MB"


@pytest.mark.parametrize("head", [UPLOAD, TOOL_UPLOAD, TUNNEL_UPLOAD], ids=["plain-http", "tools", "tunnel"])
def test_an_upstream_that_doesnt_read_holds_the_sender_back(tmp_path: Path, head: bytes) -> None:
    """What the proxy takes in is what it passed on, a chunk at a time: the rest waits in the sender."""
    chunk = b"%x\r\n%s\r\n" % (MEGABYTE, b"x" * MEGABYTE)
    with sunk(tmp_path, reading=False) as proxy, Peak() as peak:
        host, _, port = proxy.partition(":")
        with socket.create_connection((host, int(port))) as connection:
            connection.sendall(head)
            connection.settimeout(1.0)
            sent = 0
            with contextlib.suppress(TimeoutError):
                while sent < 200 * MEGABYTE:
                    sent += connection.send(chunk)
    assert sent < 32 * MEGABYTE, f"{sent / MEGABYTE:.0f} MB went in though nothing was read"
    assert peak.growth < 32 * MEGABYTE, f"the proxy grew by {peak.growth / MEGABYTE:.0f} MB"
