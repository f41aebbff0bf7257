"""What the tests share: a Link layout of their own, running a command in a sandbox, listeners on
this machine, a stand-in for the internet (this machine has none), and a terminal (a pty)."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import ipaddress
import os
import pty
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w
from lnk_sandbox.hosts import IP
from lnk_sandbox.proxy import Network, Streams
from lnk_sandbox.runner import Sandbox

from link_plugin.layout import Layout
from link_plugin.sandbox import SandboxRequest

PROGRAM = str(Path(sys.executable).with_name("lnk-sandbox"))


@dataclass
class Ran:
    code: int
    out: str
    err: str


@dataclass
class Link:
    """A Link of its own, laid out as in a real home: ~/.config/lnk and ~/Link/Agents."""

    root: Path
    environ: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def layout(self) -> Layout:
        return Layout(config=self.home / ".config" / "lnk", agents=self.home / "Link" / "Agents")

    def agent(
        self, name: str, agent_id: str, harness: str | None = "mini", owner: str = "tester@here", **settings: Any
    ) -> str:
        values = {"id": agent_id, "name": name, "owner": owner, **settings}
        if harness:
            values["harness"] = harness
        path = self.layout.agent_config(name).settings
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tomli_w.dumps(values))
        self.layout.agent(name).create()
        return name

    def grants(self, agent: str, text: str) -> Path:
        path = self.layout.agent_config(agent).sandbox
        path.write_text(text)
        return path

    def harness_grants(self, harness: str, text: str) -> Path:
        path = self.layout.harness_grants(harness)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def machine(self, text: str) -> None:
        self.layout.machine.parent.mkdir(parents=True, exist_ok=True)
        self.layout.machine.write_text(text)

    def request(self, argv: list[str], agent: str = "main", **fields: Any) -> SandboxRequest:
        fields.setdefault("harness", "mini")
        return SandboxRequest(agent=agent, argv=argv, **fields)

    def run(
        self,
        argv: list[str],
        agent: str = "main",
        *,
        network: Network | None = None,
        environ: Mapping[str, str] | None = None,
        layout: Layout | None = None,
        **fields: Any,
    ) -> Ran:
        """Run a command in the agent's sandbox, as `lnk-sandbox run` does, and collect what it said."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            code = Sandbox(
                self.request(argv, agent, **fields),
                self.layout if layout is None else layout,
                environ={**self.environ, **(environ or {})},
                network=network,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                echo=open(os.devnull, "w"),  # noqa: SIM115 - closed with the process
            ).run()
            out.seek(0)
            err.seek(0)
            return Ran(code, out.read().decode(errors="replace"), err.read().decode(errors="replace"))

    def sh(self, script: str, agent: str = "main", **fields: Any) -> Ran:
        return self.run(["sh", "-c", script], agent, **fields)

    def cli(self, *args: str, stdin: str | None = None, env: Mapping[str, str] | None = None) -> Ran:
        done = subprocess.run(
            [PROGRAM, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env={**self.environ, **(env or {})},
            timeout=120,
        )
        return Ran(done.returncode, done.stdout, done.stderr)

    def log(self, agent: str = "main") -> str:
        path = self.layout.agent_config(agent).root / "proxy.log"
        return path.read_text() if path.exists() else ""


def exchange(proxy: str, data: bytes) -> bytes:
    """Send `data` to the proxy at host:port, and read all it answers until it closes."""
    host, _, port = proxy.partition(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(data)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def accepting(sock: socket.socket, handle: Callable[[socket.socket], None]) -> None:
    """Hand each connection `sock` accepts to `handle`, in a thread, until the socket is closed."""

    def serve() -> None:
        while True:
            try:
                client, _ = sock.accept()
            except OSError:
                return
            handle(client)

    threading.Thread(target=serve, daemon=True).start()


class Listener:
    """A TCP server on every address of this machine (v4 and v6) counting who reached it."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("::", 0))
        self.sock.listen(64)
        self.port = int(self.sock.getsockname()[1])
        self.reached = 0
        accepting(self.sock, self._answer)

    def _answer(self, client: socket.socket) -> None:
        self.reached += 1
        with contextlib.suppress(OSError):
            client.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nSECRET")
        client.close()

    def close(self) -> None:
        self.sock.close()


class Page(http.server.BaseHTTPRequestHandler):
    """A web page standing in for a site on the internet; it says the Host it was asked for."""

    authorizations: list[str | None]

    def do_GET(self) -> None:
        self.authorizations.append(self.headers.get("Authorization"))
        body = f"page for {self.headers.get('Host')} at {self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class Website:
    """An http.server on the loopback for one test, standing in for a site."""

    def __init__(self) -> None:
        self.authorizations: list[str | None] = []
        handler = type("Recorded", (Page,), {"authorizations": self.authorizations})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = int(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Internet(Network):
    """The internet as the proxy sees it in tests: names with public addresses, served on the loopback.

    Only resolving and connecting stand in; the proxy judges every name and address as it would
    out there. A name it doesn't know resolves as this machine resolves it.
    """

    def __init__(self, names: dict[str, str], routes: dict[tuple[str, int], int]) -> None:
        self.names = names
        self.routes = routes
        """(public address, port) -> the loopback port serving it."""
        self.looked_up: list[str] = []
        """Every name the proxy resolved, as it asked."""

    async def resolve(self, host: str, port: int) -> list[IP]:
        self.looked_up.append(host)
        if host in self.names:
            return [ipaddress.ip_address(self.names[host])]
        return await super().resolve(host, port)

    async def connect(self, host: str, port: int) -> Streams:
        if (host, port) in self.routes:
            return await asyncio.open_connection("127.0.0.1", self.routes[(host, port)])
        return await super().connect(host, port)


class Terminal:
    """A command run with a pty as its terminal: read what it asks, type answers."""

    def __init__(self, argv: list[str], env: Mapping[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            argv, stdin=slave, stderr=slave, stdout=subprocess.PIPE, env=dict(env), start_new_session=True
        )
        os.close(slave)
        self.seen = ""

    def expect(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0 or self.process.poll() is not None and not self._ready(0):
                raise AssertionError(f"never saw {text!r}; saw {self.seen!r}")
            if self._ready(min(left, 0.1)):
                with contextlib.suppress(OSError):
                    self.seen += os.read(self.master, 4096).decode(errors="replace")
        return self.seen

    def _ready(self, timeout: float) -> bool:
        return bool(select.select([self.master], [], [], timeout)[0])

    def type(self, line: str) -> None:
        os.write(self.master, f"{line}\n".encode())

    def finish(self) -> Ran:
        out, _ = self.process.communicate(timeout=60)
        while self._ready(0):
            try:
                self.seen += os.read(self.master, 4096).decode(errors="replace")
            except OSError:
                break
        os.close(self.master)
        return Ran(self.process.returncode, out.decode(), self.seen)


def short_root() -> Iterator[Path]:
    """A folder outside /tmp, which every sandbox has its own of, as a real home is."""
    root = Path(tempfile.mkdtemp(prefix="lnk-", dir="/var/tmp"))
    yield root
    subprocess.run(["rm", "-rf", str(root)], check=False)


class ToolBridge:
    """The core's tool bridge as the proxy meets it: MCP servers under /_link/tools/<tool>/ on its unix socket."""

    def __init__(self, path: Path, names: list[str]) -> None:
        from contextlib import AsyncExitStack, asynccontextmanager

        import uvicorn
        from mcp.server import MCPServer
        from mcp.server.mcpserver.tools.base import Tool
        from mcp.server.transport_security import TransportSecuritySettings
        from starlette.applications import Starlette
        from starlette.routing import Mount

        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        apps = []
        for name in names:

            def ping(text: str = "", name: str = name) -> str:
                return f"{name} pong {text}".strip()

            server = MCPServer(name, tools=[Tool.from_function(ping, name=f"{name}_ping", description="Ping.")])
            apps.append((name, server.streamable_http_app(transport_security=security, stateless_http=True)))

        @asynccontextmanager
        async def lifespan(_app: Any) -> Any:
            async with AsyncExitStack() as stack:
                for _, app in apps:
                    await stack.enter_async_context(app.router.lifespan_context(app))
                yield

        routes = [Mount(f"/_link/tools/{name}", app=app) for name, app in apps]
        path.parent.mkdir(parents=True, exist_ok=True)
        config = uvicorn.Config(Starlette(routes=routes, lifespan=lifespan), uds=str(path), log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the tool bridge didn't start"
            time.sleep(0.01)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)


class Sink:
    """A server that reads a whole request (until the sender ends its side), then says how many
    bytes it read; or, `reading=False`, one that never reads at all. On TCP (the loopback) or on
    a unix socket (`path`), as the tool bridge is."""

    def __init__(self, path: Path | None = None, *, reading: bool = True) -> None:
        self.reading = reading
        if path is None:
            self.sock = socket.socket()
            self.sock.bind(("127.0.0.1", 0))
            self.port = int(self.sock.getsockname()[1])
        else:
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.bind(str(path))
            self.port = 0
        self.sock.listen(8)
        self.held: list[socket.socket] = []
        accepting(self.sock, self._take)

    def _take(self, client: socket.socket) -> None:
        if self.reading:
            threading.Thread(target=self._drain, args=(client,), daemon=True).start()
        else:
            self.held.append(client)

    @staticmethod
    def _drain(client: socket.socket) -> None:
        buffer = bytearray(1 << 20)
        total = 0
        with client:
            while count := client.recv_into(buffer):
                total += count
            said = str(total).encode()
            client.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(said), said))

    def close(self) -> None:
        self.sock.close()
        for client in self.held:
            client.close()


@dataclass(frozen=True)
class Held:
    """A TCP socket this process holds: its own port, its peer's, and whether it says TCP_NODELAY."""

    local: int
    peer: int
    nodelay: bool


def held_tcp() -> set[Held]:
    """Every connected TCP socket this process holds, whoever opened it (found by its descriptors;
    a socket with two, as while one is being closed, is found once)."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(int(name)))
        except OSError:
            continue  # closed since it was listed
        with sock:
            if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
                continue
            try:
                peer = sock.getpeername()
            except OSError:
                continue  # a listener
            nodelay = bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            found.add(Held(int(sock.getsockname()[1]), int(peer[1]), nodelay))
    return found


def pipes_held() -> int:
    """How many pipe ends this process has open."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/self/fd/{name}").startswith("pipe:")
    return count


def kernel_buffers(sockets: int) -> int:
    """The most bytes `sockets` TCP sockets may buffer, each its largest receive and send buffers,
    as this machine's kernel sets them: what a copy that holds nothing itself still lets in."""
    receive, send = (int(Path(f"/proc/sys/net/ipv4/tcp_{name}").read_text().split()[2]) for name in ("rmem", "wmem"))
    return sockets * (receive + send)


class Echo:
    """A TCP server on the loopback sending back what each connection sends, until it ends its side;
    `then` is sent after that end, before closing."""

    def __init__(self, then: bytes = b"") -> None:
        self.then = then
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        accepting(self.sock, lambda client: threading.Thread(target=self._echo, args=(client,), daemon=True).start())

    def _echo(self, client: socket.socket) -> None:
        with client, contextlib.suppress(OSError):
            while data := client.recv(1 << 20):
                client.sendall(data)
            client.sendall(self.then)

    def close(self) -> None:
        self.sock.close()


def resident() -> int:
    """This process's resident memory now, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


class Peak:
    """The most resident memory this process had while the block ran, above what it had before."""

    def __init__(self) -> None:
        self.before = 0
        self.highest = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._done.wait(0.01):
            self.highest = max(self.highest, resident())

    @property
    def growth(self) -> int:
        return max(0, self.highest - self.before)

    def __enter__(self) -> Peak:
        self.before = resident()
        self.highest = self.before
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


class Wiretap:
    """A relay on the loopback passing every connection on to `port`, keeping a copy of each byte
    that crossed it either way: what a listener on that wire would have seen."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.upstream = bytearray()
        """Every byte sent towards `port`."""
        self.downstream = bytearray()
        """Every byte that came back."""
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = int(self.sock.getsockname()[1])
        self._lock = threading.Lock()
        accepting(self.sock, self._relay)

    @property
    def seen(self) -> bytes:
        with self._lock:
            return bytes(self.upstream) + bytes(self.downstream)

    def _relay(self, client: socket.socket) -> None:
        server = socket.create_connection(("127.0.0.1", self.target))
        threading.Thread(target=self._copy, args=(client, server, self.upstream), daemon=True).start()
        threading.Thread(target=self._copy, args=(server, client, self.downstream), daemon=True).start()

    def _copy(self, source: socket.socket, sink: socket.socket, kept: bytearray) -> None:
        try:
            while data := source.recv(65536):
                with self._lock:
                    kept.extend(data)
                sink.sendall(data)
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()
