"""The agent's tools, served by a tool bridge that loads at the first request that needs it.

The tool bridge (lnk.toolbridge) is an MCP server, and importing the MCP SDK costs the supervisor
about 0.4 s of CPU and 26 MiB; a run may never reach a tool (a harness lists its tools when a turn
starts, not when the harness starts). So the supervisor holds this in its place: it knows the
tools' names without the SDK, and loads the bridge when something needs it: a tool request on
the gateway or the tools socket, the question how far memory has indexed, memory's warm-up. The
SDK is imported off the event loop, so the supervisor answers meanwhile; requests arriving during
the load wait for that one load, and later ones go straight to the bridge.

The bridge runs in a task of its own, started with `serving()`. Its session managers run anyio task
groups, which must be left by the task that entered them: entered in the first request's task and
left from the supervisor's at its end, they would fail. The task waits until the bridge is wanted,
loads and runs it, and leaves it when `serving()` ends (after the sockets stopped serving): the
tools' servers are closed then, as everything stops.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Scope, Send

from link_plugin.layout import Layout
from lnk.approvals import Approvals
from lnk.tooldefs import ToolDef

if TYPE_CHECKING:
    from lnk.toolbridge import Target, ToolBridge


class ToolsOnDemand:
    """The agent's tools by name, and their bridge once something asks for it."""

    def __init__(
        self,
        tools: list[ToolDef],
        approvals: Approvals,
        log: Path,
        target: Callable[[ToolDef], Target],
        layout: Layout,
    ) -> None:
        """What the bridge is built from (lnk.toolbridge.ToolBridge); `log`: where each call is logged."""
        self.names = frozenset(tool.name for tool in tools)
        self._tools, self._approvals, self._log, self._target, self._layout = tools, approvals, log, target, layout
        self._wanted = asyncio.Event()
        self._ending = asyncio.Event()
        self._ready: asyncio.Future[ToolBridge] = asyncio.get_running_loop().create_future()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[ToolsOnDemand]:
        """The bridge's task runs while this lasts; at its end the bridge, if it loaded, stops."""
        task = asyncio.create_task(self._hold())
        try:
            yield self
        finally:
            self._ending.set()
            self._wanted.set()
            await task

    def load(self) -> None:
        """Load the bridge now, without waiting for it (for memory, which indexes from the start)."""
        self._wanted.set()

    async def bridge(self) -> ToolBridge:
        """The running bridge: the first ask loads it, and asks meanwhile wait for the same load."""
        self._wanted.set()
        return await asyncio.shield(self._ready)  # a request given up doesn't end the load for the others

    async def serve(self, tool: str, scope: Scope, receive: Receive, send: Send) -> bool:
        """Serve one MCP request for the tool; False, without loading anything, for a tool the agent lacks."""
        if tool not in self.names:
            return False
        return await (await self.bridge()).serve(tool, scope, receive, send)

    async def status(self, name: str) -> Any:
        """What the tool says of itself (how far memory has indexed), the bridge loaded to ask it."""
        return await (await self.bridge()).status(name)

    async def _hold(self) -> None:
        """The bridge's own task: once wanted, it loads the bridge and runs it until `serving()` ends."""
        await self._wanted.wait()
        if self._ending.is_set():
            self._ready.cancel()  # never wanted: nothing loaded, nothing to stop
            return
        try:
            await asyncio.to_thread(importlib.import_module, "lnk.toolbridge")
            from lnk.toolbridge import CallLog, ToolBridge

            calls = CallLog(self._log)
            bridge = ToolBridge(self._tools, self._approvals, calls, self._target, self._layout)
            async with bridge.running():
                self._ready.set_result(bridge)
                await self._ending.wait()
        except Exception as exc:
            if self._ready.done():
                raise
            self._ready.set_exception(exc)  # each ask says why, rather than waiting forever
