"""Stand-in tools: small MCP servers over streamable HTTP, each with one tool named after it.

A harness is handed them by name and address (HarnessSettings.tools), so a check can see which
tools the harness offers the model in each conversation, and what each call's `_meta` told the
tool of the conversation calling it (`metas`).
"""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.transport_security import TransportSecuritySettings

from link_conformance.serving import Served


def _server(name: str, metas: list[dict[str, Any]]) -> MCPServer:
    def ping(ctx: Context, text: str = "") -> str:
        meta = ctx.request_context.meta
        metas.append(dict(meta) if meta is not None else {})
        return f"{name} pong {text}".strip()

    tool = Tool.from_function(ping, name=f"{name}_ping", description=f"Ping the {name} tool.")
    return MCPServer(name, tools=[tool], log_level="WARNING")


class StandInTools:
    """One MCP server per name; `addresses` is what a harness is handed."""

    def __init__(self, names: tuple[str, ...] = ("alpha", "beta", "gamma")) -> None:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        self.metas: list[dict[str, Any]] = []
        """Each call's `_meta`, in the order the calls came."""
        self._served = {
            name: Served(
                _server(name, self.metas).streamable_http_app(transport_security=security, stateless_http=True)
            )
            for name in names
        }

    @property
    def addresses(self) -> dict[str, str]:
        return {name: f"{served.origin}/mcp" for name, served in self._served.items()}

    @staticmethod
    def tool_of(name: str) -> str:
        """The one tool server `name` offers."""
        return f"{name}_ping"

    def start(self) -> StandInTools:
        for served in self._served.values():
            served.start()
        return self

    def stop(self) -> None:
        for served in self._served.values():
            served.stop()

    def __enter__(self) -> StandInTools:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
