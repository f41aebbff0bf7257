"""The tool bridge: each tool that runs outside the harness's sandbox, served to it as MCP over HTTP.

A tool's own server (a command speaking MCP over stdio, or an address) is connected once and kept,
and again after it ended (a call cut off by its end is made again only when the server says the
call only reads); its tools, resources and descriptions pass through untranslated, and so does each
call's `_meta`, where the harness names the calling conversation. Every call is
logged, and a call not in the server's "don't ask first" list waits for the owner's yes
(approvals.py) before it runs.

A tool a plugin defines (memory, the scheduler) lists the same tools for as long as its release and
its definition stay the same, so its listing is kept (lnk.kept) and a harness listing the agent's
tools at a start or a turn is answered from it: the server starts only for what needs it (a call,
a resource), and an agent that never schedules anything never runs the scheduler's server. A tool
whose program prints its listing (`ToolDef.lists`: the scheduler's, the same for every agent) is
listed from that before anything was kept for its definition, so a new agent, or a new home, never
starts the server just to list; a program that can't print it (an older release) is asked by its
server, as any other tool is.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CONNECTION_CLOSED
from starlette.types import Receive, Scope, Send

from link_plugin.layout import Layout
from link_plugin.model import Model
from link_plugin.waits import within
from lnk import kept
from lnk.approvals import Approvals
from lnk.tooldefs import ToolDef, listing_question

Target = StdioServerParameters | str
T = TypeVar("T")
STATUS_RESOURCE = "memory://status"
RELEASE_LISTING = "listing"
"""What a program's `lists` command printed is kept (lnk.kept) as the answer to this question: for
its release, whichever agent's tool it serves."""
LISTS_TIMEOUT = 30.0


class KeptListing(Model):
    defined: str
    """The tool's definition (argv, environment, folders), hashed: defined anew, listed anew."""
    listed: types.ListToolsResult


class Listing:
    """Where a plugin's tool keeps what it lists: one file per tool, for its program's release."""

    def __init__(self, layout: Layout, tool: ToolDef) -> None:
        self._layout = layout
        self._program = tool.argv[0]
        self._lists = tool.lists
        self._question = listing_question(tool.name)
        defined = json.dumps([tool.argv, tool.env, tool.cwd, tool.reads, tool.writes], sort_keys=True)
        self._defined = hashlib.sha256(defined.encode()).hexdigest()

    def read(self) -> types.ListToolsResult | None:
        """What the server lists: kept for this definition, else as its release prints it; None if neither."""
        found = kept.kept(self._layout, self._program, self._question, KeptListing)
        if found is not None and found.defined == self._defined:
            return found.listed
        return self._released()

    def _released(self) -> types.ListToolsResult | None:
        """What the program's `lists` command prints, asked once per release (lnk.kept)."""
        if not self._lists:
            return None
        found = kept.kept(self._layout, self._program, RELEASE_LISTING, types.ListToolsResult)
        if found is not None:
            return found
        try:
            printed = subprocess.run(self._lists, capture_output=True, timeout=LISTS_TIMEOUT, check=True)
            found = types.ListToolsResult.model_validate_json(printed.stdout)
        except (OSError, subprocess.SubprocessError, ValueError):
            return None  # a release that can't print it: its server lists, as for any tool
        with contextlib.suppress(OSError):  # not kept: printed again at the next start
            kept.keep(self._layout, self._program, RELEASE_LISTING, found)
        return found

    def keep(self, listed: types.ListToolsResult) -> None:
        kept.keep(self._layout, self._program, self._question, KeptListing(defined=self._defined, listed=listed))


def listing(layout: Layout, tool: ToolDef) -> Listing | None:
    """The kept listing of a tool Link defines from a plugin (sandboxed, a program of its own); none
    for the owner's own tools, whose program (`npx`, a script) says nothing of what it serves."""
    if not tool.sandboxed or not tool.argv:
        return None
    return Listing(layout, tool)


class Backend:
    """One tool's own MCP server, connected on first use and again after it ended."""

    def __init__(self, target: Target, listing: Listing | None = None) -> None:
        self._target = target
        self._listing = listing
        self._kept: types.ListToolsResult | None = None
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._error: BaseException | None = None
        self._reads: set[str] = set()

    async def client(self) -> Client:
        async with self._lock:
            if self._task is None or self._task.done():
                self._ready, self._closing, self._error = asyncio.Event(), asyncio.Event(), None
                self._task = asyncio.create_task(self._hold())
                await self._ready.wait()
            if self._client is None:
                raise RuntimeError(f"the tool's server did not start: {self._error}")
            return self._client

    async def use(self, ask: Callable[[Client], Awaitable[T]]) -> T:
        """Ask the server; when it turns out to have ended, the next ask starts it again."""
        client = await self.client()
        try:
            return await ask(client)
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED:
                async with self._lock:
                    if self._client is client:
                        await self.close()
            raise

    async def list_tools(self, cursor: str | None) -> types.ListToolsResult:
        """The server's tools: kept from this release while the server isn't running, else asked
        (and a whole listing kept)."""
        if self._listing is not None and cursor is None and self._client is None:
            self._kept = self._kept or await asyncio.to_thread(self._listing.read)
            if self._kept is not None:
                return self._kept
        listed = await self.use(lambda client: client.list_tools(cursor=cursor))
        if self._listing is not None and cursor is None and not listed.next_cursor and listed != self._kept:
            with contextlib.suppress(OSError):  # not kept: listed by the server again next time
                await asyncio.to_thread(self._listing.keep, listed)
                self._kept = listed
        return listed

    def only_reads(self, call: str) -> bool:
        """Whether the server says the call only reads (or may be made twice): one cut off may be made again."""
        return call in self._reads

    async def fresh(self) -> None:
        """Start the server again if it ended while idle, so a call that changes something isn't given
        to one that's gone. A listing asks it: what a server must answer in every protocol version."""
        try:
            await self.use(lambda client: client.list_tools())
        except MCPError as exc:
            if exc.error.code != CONNECTION_CLOSED:
                raise

    async def _hold(self) -> None:
        try:
            async with Client(self._target, cache=None) as client:
                self._reads = await _reading_calls(client)
                self._client = client
                self._ready.set()
                await self._closing.wait()
        except Exception as exc:  # the server ended or never started: the next call starts it again
            self._error = exc
        finally:
            self._client = None
            self._ready.set()

    async def close(self) -> None:
        self._closing.set()
        if self._task is not None:
            try:
                await within(self._task, 5)
            except TimeoutError:
                self._task.cancel()


async def _status(client: Client) -> Any:
    if client.server_capabilities.resources is None:
        return None
    listed = await client.list_resources()
    if not any(str(r.uri) == STATUS_RESOURCE for r in listed.resources):
        return None
    contents = (await client.read_resource(STATUS_RESOURCE)).contents
    text = next((c.text for c in contents if isinstance(c, types.TextResourceContents)), None)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


async def _reading_calls(client: Client) -> set[str]:
    """The calls the server's listing marks as only reading, or as safe to make twice."""
    reads: set[str] = set()
    cursor: str | None = None
    while True:
        try:
            listed = await client.list_tools(cursor=cursor)
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED:
                raise
            return reads  # a server that lists no tools has no call to make again
        for tool in listed.tools:
            hints = tool.annotations
            if hints is not None and (hints.read_only_hint or hints.idempotent_hint):
                reads.add(tool.name)
        cursor = listed.next_cursor
        if not cursor:
            return reads


class CallLog:
    """Every call, one JSON line each: when, which tool and call, what the owner said, how it ended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, **entry: Any) -> None:
        line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **entry}, default=str)
        with self.path.open("a") as handle:
            handle.write(line[:8000] + "\n")


def _refused(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


class ToolBridge:
    def __init__(
        self,
        tools: list[ToolDef],
        approvals: Approvals,
        log: CallLog,
        target: Callable[[ToolDef], Target],
        layout: Layout | None = None,
    ) -> None:
        """`layout`: where the listings of the tools plugins define are kept (none kept without it)."""
        self.tools = {tool.name: tool for tool in tools}
        self.approvals = approvals
        self.log = log
        self.backends = {
            tool.name: Backend(target(tool), listing(layout, tool) if layout is not None else None) for tool in tools
        }
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        self._managers = {
            tool.name: StreamableHTTPSessionManager(app=self._server(tool), stateless=True, security_settings=security)
            for tool in tools
        }

    def _server(self, tool: ToolDef) -> Server[Any]:
        backend = self.backends[tool.name]

        async def list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return await backend.list_tools(params.cursor if params else None)

        async def call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            return await self.call(tool, params.name, dict(params.arguments or {}), params.meta)

        async def list_resources(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListResourcesResult:
            async def listed(client: Client) -> types.ListResourcesResult:
                if client.server_capabilities.resources is None:
                    return types.ListResourcesResult(resources=[])
                return await client.list_resources(cursor=params.cursor if params else None)

            return await backend.use(listed)

        async def read_resource(
            ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
        ) -> types.ReadResourceResult:
            return await backend.use(lambda client: client.read_resource(params.uri))

        return Server(
            tool.name,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_read_resource=read_resource,
        )

    async def call(
        self, tool: ToolDef, call: str, arguments: dict[str, Any], meta: types.RequestParamsMeta | None = None
    ) -> types.CallToolResult:
        """Make one call, once the owner said yes where they must; `meta` (the harness's word on the
        calling conversation, `link.local/*`) goes on to the tool untouched."""
        started = time.monotonic()
        if call in tool.no_ask:
            decision = "no-ask"
        else:
            answer = await self.approvals.ask(tool.name, call, arguments)
            decision = {True: "allowed", False: "denied", None: "unanswered"}[answer]
            if answer is not True:
                self.log.write(tool=tool.name, call=call, arguments=arguments, decision=decision, ok=False)
                said = "refused it" if answer is False else f"didn't answer in {self.approvals.timeout:.0f} s"
                return _refused(f"The call {call} of {tool.name} was not made: the owner {said}.")
        backend = self.backends[tool.name]
        try:
            await backend.client()
            reads = backend.only_reads(call)
            if not reads:
                await backend.fresh()
            try:
                result = await backend.use(lambda client: client.call_tool(call, arguments, meta=meta))
            except MCPError as exc:
                if exc.error.code != CONNECTION_CLOSED:
                    raise
                if not reads:
                    raise RuntimeError(
                        "its server ended during the call, which was not made again: it may change something"
                    ) from exc
                result = await backend.use(lambda client: client.call_tool(call, arguments, meta=meta))
        except Exception as exc:
            self.log.write(tool=tool.name, call=call, arguments=arguments, decision=decision, ok=False, error=str(exc))
            return _refused(f"{tool.name} failed: {exc}")
        ms = round((time.monotonic() - started) * 1000)
        self.log.write(tool=tool.name, call=call, arguments=arguments, decision=decision, ok=not result.is_error, ms=ms)
        return result

    async def status(self, name: str) -> Any:
        """What a tool says of itself at memory://status (how far memory has indexed), if it says."""
        return await self.backends[name].use(_status)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ToolBridge]:
        async with AsyncExitStack() as stack:
            for manager in self._managers.values():
                await stack.enter_async_context(manager.run())
            try:
                yield self
            finally:
                await asyncio.gather(*(backend.close() for backend in self.backends.values()))

    async def serve(self, tool: str, scope: Scope, receive: Receive, send: Send) -> bool:
        """Serve one MCP request for the tool; False when the agent has no such tool."""
        manager = self._managers.get(tool)
        if manager is None:
            return False
        await manager.handle_request({**scope, "path": "/mcp", "raw_path": b"/mcp"}, receive, send)
        return True
