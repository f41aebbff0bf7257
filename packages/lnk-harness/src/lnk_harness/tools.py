"""An agent's tools: MCP servers over streamable HTTP, each by name and address.

Each server's tools reach the model as the server describes them (name, description, input
schema), untranslated. A tool's answer is kept up to 32 KiB and cut with a note past that.
`remember` (memory's only write) is offered only in the owner's own conversations. Each call
tells its tool, in `_meta`, which conversation called: its tools, its thread and how many hops its
message came (`link_plugin.wire.META_*`), so a tool acting for it (Link Scheduler) acts no wider.

A harness with tools loads the MCP client as it starts (about 1 s and 24 MiB, off its event loop)
and then asks each server it holds no listing of for one (`list_first`): a person's first message,
which comes later, finds its tools listed, however long the listing took on a loaded machine. A
harness without tools never loads the client. Each server has one HTTP client, made with the
SDK's MCP timeouts the first time it is listed, off the event loop, and kept for every session
opened to it after, listings and calls alike: a client of its own per session read the system's
authorities each time (0.1–0.3 s of every turn that called a tool, on a loaded machine).

A step waits at most `FIRST_WAIT` for a server it never listed (the memory tool may still be
starting), or `FIRST_LOAD_WAIT` while the MCP client is still loading (the first turn after a
start: a question asked days later, after a restart, needs its memory as much as any); it then
goes to the model without that server's tools, which come at the next step or turn, as soon as
the listing is back. A listing older than
`LISTING_TTL` is used while it is asked again, so no later step waits for one.

Each listing is also kept on disk (`chats/.tool-listings.json`, beside the conversations the
harness alone writes), by server name and address. After a restart a kept listing is a listing
past its time: the first turn is offered those tools at once while the server is asked again,
so it waits neither for the MCP client to load nor for a tool's own server to start (a second
or more each, under load). A server listed under another address, or never, is waited for as
above. What the model is offered is only an offer: each call goes to the tool, which answers
for what it has, so a listing a new release changed costs at most one step.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from link_plugin import LinkError
from link_plugin.files import write_atomic
from link_plugin.wire import META_HOPS, META_THREAD, META_TOOLS

if TYPE_CHECKING:
    import httpx2
    from mcp import Client
    from mcp_types import CallToolResult, RequestParamsMeta

log = logging.getLogger("lnk_harness.tools")

ANSWER_MAX = 32 * 1024
"""Bytes of a tool's answer kept for the model."""
OWNER_ONLY = frozenset({"remember"})
"""Tools offered only in the owner's own conversations (and chats the owner shared)."""
LISTING_TTL = 300.0
"""Seconds after which a server's tool listing is asked again (it is used meanwhile)."""
FIRST_WAIT = 0.5
"""Seconds a step waits for a server never listed before it goes to the model without its tools."""
FIRST_LOAD_WAIT = 3.0
"""Seconds the first step after a start waits for the MCP client to load (about 1 s) and list."""
KEPT_LISTINGS = ".tool-listings.json"
"""The file in the agent's chats folder keeping each server's last listing across restarts."""
CALL_TIMEOUT = 300.0
LIST_TIMEOUT = 10.0
MAX_PAGES = 20


_client_loaded = False
"""Whether this process has loaded the MCP client: once, from the start of a harness with tools."""


async def load_client() -> None:
    """Load the MCP client off the event loop: a harness with tools starts loading it as it starts,
    so the first turn (which waits for it at most `FIRST_LOAD_WAIT`) finds it loaded, or nearly."""
    global _client_loaded
    if not _client_loaded:
        await asyncio.to_thread(importlib.import_module, "mcp")  # off the event loop: it loads slowly
        _client_loaded = True
        log.info("the MCP client is loaded: the agent's tools can be listed")


@dataclass(frozen=True)
class ToolSpec:
    server: str
    name: str
    description: str
    schema: dict[str, Any]


def cap(text: str, limit: int = ANSWER_MAX) -> str:
    """Keep the first `limit` bytes of a tool's answer, saying so when it was cut."""
    raw = text.encode()
    if len(raw) <= limit:
        return text
    kept = raw[:limit].decode(errors="ignore")
    return f"{kept}\n[cut: the tool answered {len(raw)} bytes; only the first {limit // 1024} KiB are kept]"


def render(result: CallToolResult) -> str:
    """A tool's answer as text for the model."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(str(getattr(block, "text", "")))
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {getattr(block, 'mime_type', 'unknown type')}]")
        elif kind == "resource_link":
            parts.append(f"[resource: {getattr(block, 'uri', '')}]")
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource: {getattr(resource, 'uri', '')}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(parts)
    if result.is_error:
        text = f"The tool answered with an error: {text}"
    return cap(text)


@dataclass
class Toolbox:
    """One agent's tool servers, with their listings kept a while (they're the agent's, not a turn's)."""

    addresses: dict[str, str]
    ttl: float = LISTING_TTL
    kept: Path | None = None
    """Where listings are kept across restarts (none: only in this process)."""
    _listings: dict[str, tuple[float, list[ToolSpec]]] = field(default_factory=dict)
    _read_kept: bool = False
    _asking: dict[str, asyncio.Task[list[ToolSpec]]] = field(default_factory=dict)
    _http: dict[str, httpx2.AsyncClient] = field(default_factory=dict)

    async def open(self, server: str, read_timeout: float) -> Client:
        """A session to `server`, not yet entered, over that server's own HTTP client (one per
        server, so nothing one server sets, a cookie say, ever goes to another)."""
        await load_client()
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        if server not in self._http:
            # Made off the event loop: it reads the system's authorities (for a server on https).
            made = await asyncio.to_thread(create_mcp_http_client)
            self._http.setdefault(server, made)  # one made meanwhile, by a session opened beside, stays
        transport = streamable_http_client(self.addresses[server], http_client=self._http[server])
        return Client(transport, read_timeout_seconds=read_timeout)

    async def list_first(self) -> None:
        """Load the MCP client, then ask each server never listed (nor kept by the last run) for its
        listing, as the harness starts; done when each answered or failed. A turn arriving meanwhile
        shares the listing being asked, and waits for it as it would for its own."""
        await load_client()
        self._load_kept()
        asking = [self._listing(server) for server in self.addresses if server not in self._listings]
        if asking:
            await asyncio.gather(*asking)

    def _listing(self, server: str) -> asyncio.Task[list[ToolSpec]]:
        """The server's listing being asked: one at a time per server, turns arriving together share it."""
        if server not in self._asking:
            self._asking[server] = asyncio.create_task(self._ask_listing(server))
            self._asking[server].add_done_callback(lambda _: self._asking.pop(server, None))
        return self._asking[server]

    async def _lists(self, servers: list[str], wait: float) -> list[list[ToolSpec]]:
        """Each server's tools: as listed (asked again in the background when old), or, for one never
        listed, as its listing gives within `wait` seconds; nothing for one that didn't."""
        self._load_kept()
        pending: list[asyncio.Task[list[ToolSpec]]] = []
        for server in servers:
            kept = self._listings.get(server)
            if kept is None or time.monotonic() - kept[0] >= self.ttl:
                asking = self._listing(server)
                if kept is None:
                    pending.append(asking)
        if pending:
            await asyncio.wait(pending, timeout=wait if _client_loaded else max(wait, FIRST_LOAD_WAIT))
        return [self._listings.get(server, (0.0, []))[1] for server in servers]

    async def _ask_listing(self, server: str) -> list[ToolSpec]:
        specs: list[ToolSpec] = []
        try:
            async with await self.open(server, LIST_TIMEOUT) as client:
                cursor: str | None = None
                for _ in range(MAX_PAGES):
                    page = await client.list_tools(cursor=cursor)
                    specs += [
                        ToolSpec(server, tool.name, tool.description or "", dict(tool.input_schema))
                        for tool in page.tools
                    ]
                    cursor = page.next_cursor
                    if not cursor:
                        break
        except Exception as exc:
            # A tool that doesn't answer costs its tools this turn, never the answer.
            log.warning("the tool %s at %s can't be listed: %s", server, self.addresses[server], exc)
            return []
        before = self._listings.get(server)
        self._listings[server] = (time.monotonic(), specs)
        if before is None or before[1] != specs:
            log.info("the tools of %s are listed: %s", server, ", ".join(spec.name for spec in specs) or "none")
            if self.kept is not None:
                await asyncio.to_thread(self._keep)
        return specs

    def _load_kept(self) -> None:
        """The listings kept by the last run, each as one past its time (used, and asked again);
        only those of servers still at the same address. Once, at the first turn."""
        if self._read_kept or self.kept is None:
            return
        self._read_kept = True
        try:
            kept = json.loads(self.kept.read_text())
            for server, listing in kept.items():
                if server in self.addresses and listing["address"] == self.addresses[server]:
                    specs = [ToolSpec(server, t["name"], t["description"], dict(t["schema"])) for t in listing["tools"]]
                    self._listings.setdefault(server, (-float("inf"), specs))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            if not isinstance(exc, FileNotFoundError):
                log.warning("the kept tool listings %s can't be read (%s): the tools are listed afresh", self.kept, exc)

    def _keep(self) -> None:
        assert self.kept is not None
        listings = {
            server: {"address": self.addresses[server], "tools": [asdict(spec) for spec in specs]}
            for server, (_, specs) in self._listings.items()
        }
        try:
            write_atomic(self.kept, json.dumps(listings))
        except OSError as exc:
            log.warning("the tool listings can't be kept in %s: %s", self.kept, exc)

    def servers(self, narrowed: frozenset[str] | None) -> list[str]:
        return [name for name in self.addresses if narrowed is None or name in narrowed]

    async def offered(self, narrowed: frozenset[str] | None, owner: bool, wait: float = FIRST_WAIT) -> list[ToolSpec]:
        """The tools a conversation has now: its servers' (all, or those it was narrowed to) that are
        listed, or whose first listing comes within `wait` seconds."""
        listings = await self._lists(self.servers(narrowed), wait)
        offered: dict[str, ToolSpec] = {}
        for specs in listings:
            for spec in specs:
                if spec.name in OWNER_ONLY and not owner:
                    continue
                if spec.name in offered:
                    first = offered[spec.name].server
                    log.warning("the tool %s of %s is also %s's: %s's is kept", spec.name, spec.server, first, first)
                    continue
                offered[spec.name] = spec
        return list(offered.values())


class ToolUnreachable(LinkError):
    """The connection to a tool failed or broke before the call was answered: the tool failed, or
    the way to it is gone (way_out.py tells which in a sandbox). The message is the call's result
    when the tool failed."""


def _cut(exc: BaseException) -> bool:
    """Whether a call failed for its connection (refused, broken, closed under it), not its tool."""
    import httpx2
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED

    if isinstance(exc, BaseExceptionGroup):
        return any(_cut(inner) for inner in exc.exceptions)
    if isinstance(exc, MCPError):
        return exc.error.code == CONNECTION_CLOSED
    return isinstance(exc, httpx2.TransportError)


class ToolCalls:
    """The sessions one turn opens to its tools, closed when the turn ends.

    Each session is held by a task of its own, never the turn's: the MCP client's transport runs in
    a task group that cancels the task which entered it when its connection breaks. Entered by the
    turn, a tool's connection cut mid-call cancelled the turn itself, which then never answered;
    held apart, the cut ends that session alone, and the call waiting on it fails ("Connection
    closed")."""

    def __init__(self, toolbox: Toolbox, conversation_tools: list[str], thread: str, hops: int = 0) -> None:
        self._toolbox = toolbox
        meta = {META_TOOLS: conversation_tools, META_THREAD: thread, META_HOPS: hops}
        self._meta = cast("RequestParamsMeta", meta)
        self._closing = asyncio.Event()
        self._clients: dict[str, asyncio.Future[Client]] = {}
        self._sessions: dict[str, asyncio.Task[None]] = {}

    async def __aenter__(self) -> ToolCalls:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closing.set()
        for server, session in self._sessions.items():
            try:
                await session
            except Exception as error:
                log.warning("the session to the tool %s ended in error: %s", server, error)

    async def _hold(self, server: str, opened: asyncio.Future[Client]) -> None:
        """Open a session to `server` and keep it until the turn ends (or its connection breaks)."""
        try:
            async with await self._toolbox.open(server, CALL_TIMEOUT) as client:
                opened.set_result(client)
                await self._closing.wait()
        except Exception as exc:
            if opened.done():
                raise
            opened.set_exception(exc)  # it never opened: each call to it says why
        finally:
            if not opened.done():
                opened.cancel()

    async def _client(self, server: str) -> Client:
        if server not in self._clients:
            self._clients[server] = asyncio.get_running_loop().create_future()
            self._sessions[server] = asyncio.create_task(self._hold(server, self._clients[server]))
        return await self._clients[server]

    async def call(self, spec: ToolSpec, arguments: str) -> str:
        """The call's result for the model: the tool's answer, or why it failed; ToolUnreachable when
        the connection to the tool failed or broke before it answered."""
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            return f"The call was not made: its arguments are not JSON ({exc.msg}). Call it again with a JSON object."
        if not isinstance(parsed, dict):
            return "The call was not made: its arguments must be a JSON object."
        try:
            client = await self._client(spec.server)
            result = await client.call_tool(spec.name, parsed, meta=self._meta)
        except Exception as exc:
            log.warning("the tool %s of %s failed: %s", spec.name, spec.server, exc)
            said = f"The tool {spec.name} could not be called: {type(exc).__name__}: {exc}"
            if _cut(exc):
                raise ToolUnreachable(said) from exc
            return said
        return render(result)
