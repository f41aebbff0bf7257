"""Real MCP servers over streamable HTTP for the tests: they record every call they get."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.transport_security import TransportSecuritySettings

from link_conformance.serving import Served

BIG = 100 * 1024


class Gate:
    """An MCP server's app that answers nothing until opened: a tool server still starting."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.opened = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await asyncio.to_thread(self.opened.wait, 60)
        await self.app(scope, receive, send)


class ToolServers:
    """memory (search, remember), slow (wait: held until released), big (dump: 100 KiB), meta (whoami),
    late (hello: answers nothing, its listing included, until `late.opened` is set)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.metas: list[dict[str, Any]] = []
        self.release = threading.Event()
        self._lock = threading.Lock()

        def record(name: str, arguments: dict[str, Any]) -> None:
            with self._lock:
                self.calls.append((name, arguments))

        def search(query: str) -> str:
            record("search", {"query": query})
            return f"found: the lease ends in March ({query})"

        def remember(line: str) -> str:
            record("remember", {"line": line})
            return "kept"

        async def wait(text: str = "") -> str:
            record("wait", {"text": text})
            await asyncio.to_thread(self.release.wait, 60)
            return f"waited {text}"

        def dump() -> str:
            record("dump", {})
            return "x" * BIG

        def whoami(ctx: Context) -> str:
            record("whoami", {})
            meta = ctx.request_context.meta or {}
            with self._lock:
                self.metas.append(dict(meta))
            return "you are a test"

        def hello() -> str:
            record("hello", {})
            return "hello from a late server"

        def app(name: str, *functions: tuple[Callable[..., Any], str]) -> Any:
            tools = [Tool.from_function(fn, name=fn.__name__, description=doc) for fn, doc in functions]
            security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
            return MCPServer(name, tools=tools, log_level="WARNING").streamable_http_app(
                transport_security=security, stateless_http=True
            )

        def server(name: str, *functions: tuple[Callable[..., Any], str]) -> Served:
            return Served(app(name, *functions))

        self.late = Gate(app("late", (hello, "Say hello.")))

        self._served = {
            "memory": server(
                "memory",
                (search, "Search the agent's memory by words and meaning."),
                (remember, "Add one line to notes.md."),
            ),
            "slow": server("slow", (wait, "Wait until released.")),
            "big": server("big", (dump, "Dump a lot of text.")),
            "meta": server("meta", (whoami, "Say who calls.")),
            "late": Served(self.late),
        }

    def address(self, name: str) -> str:
        return f"{self._served[name].origin}/mcp"

    @property
    def addresses(self) -> dict[str, str]:
        return {name: self.address(name) for name in self._served}

    def called(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return [arguments for called, arguments in self.calls if called == name]

    def __enter__(self) -> ToolServers:
        for served in self._served.values():
            served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.late.opened.set()
        for served in self._served.values():
            served.stop()
