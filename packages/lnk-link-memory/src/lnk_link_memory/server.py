"""The MCP server over one memory: the tools search, read, list, links and remember, and memory://status."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resources import FunctionResource
from mcp.server.mcpserver.tools.base import Tool
from mcp_types import ToolAnnotations
from pydantic import Field

from lnk_link_memory import __version__
from lnk_link_memory.answers import LinksAnswer, ListAnswer, ReadAnswer, Remembered, SearchAnswer, Status
from lnk_link_memory.memory import AskError, Memory

T = TypeVar("T")

STATUS_URI = "memory://status"

Since = Annotated[str | None, Field(description="only what was changed or first seen after this ISO date or datetime")]
Size = Annotated[
    int | None, Field(description="the answer's size in tokens (about 4 characters each); 6,000 unless given")
]
Next = Annotated[str | None, Field(description="the `next` of the answer before, to carry on from there")]


async def _off_loop(call: Callable[[], T]) -> T:
    """Memory reads files and SQLite: done in a worker thread, never on the event loop."""
    try:
        return await anyio.to_thread.run_sync(call)
    except AskError as exc:
        raise ToolError(str(exc)) from None


def _tools(memory: Memory) -> list[Tool]:
    async def search(
        query: Annotated[str, Field(description="words or a question: searched by its words and by its meaning")],
        since: Since = None,
        size: Size = None,
        next: Next = None,
    ) -> SearchAnswer:
        """Search this agent's memory: its documents, its notes and its past conversations.

        One search, no modes: each result says whether it matched by words, by meaning or both, and
        `kind` says which results are conversations. `line` is where the passage starts: `read` it
        from there for more. The answer says how far embedding has got."""
        return await _off_loop(lambda: memory.search(query, since, size, next))

    async def read(**arguments: Any) -> ReadAnswer:
        """Read a document from memory, whole lines at a time: `next` says where to go on from."""
        return await _off_loop(lambda: memory.read(arguments["path"], arguments.get("from"), arguments.get("size")))

    # A parameter can't be called `from` in Python: the tool's signature says it by alias.
    read.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                "path",
                inspect.Parameter.KEYWORD_ONLY,
                annotation=Annotated[str, Field(description="the path as search or list give it")],
            ),
            inspect.Parameter(
                "start",
                inspect.Parameter.KEYWORD_ONLY,
                default=None,
                annotation=Annotated[int | None, Field(alias="from", description="the first line to read, from 1")],
            ),
            inspect.Parameter("size", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Size),
        ],
        return_annotation=ReadAnswer,
    )

    async def list_(since: Since = None, size: Size = None, next: Next = None) -> ListAnswer:
        """What changed in memory: documents new, changed or removed after `since` (all of them, newest
        first, without it). What was there when memory first read the folder is not news."""
        return await _off_loop(lambda: memory.changes(since, size, next))

    async def links(
        path: Annotated[str, Field(description="the document's path as search or list give it")],
        size: Size = None,
    ) -> LinksAnswer:
        """What a document links to and what links to it: markdown links and [[wiki links]]."""
        return await _off_loop(lambda: memory.links(path, size))

    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    tools = [
        Tool.from_function(search, name="search", annotations=reading),
        Tool.from_function(read, name="read", annotations=reading),
        Tool.from_function(list_, name="list", annotations=reading),
        Tool.from_function(links, name="links", annotations=reading),
    ]
    if memory.writable:

        async def remember(
            add: Annotated[str | None, Field(description="a new note: one line added to the notes")] = None,
            change: Annotated[str | None, Field(description="text held by the one line to change")] = None,
            to: Annotated[str | None, Field(description="that line's new text (with change)")] = None,
            forget: Annotated[str | None, Field(description="text held by the one line to remove")] = None,
        ) -> Remembered:
            """Keep a note in mind for every conversation: add a line to your notes, change the one line
            holding some text, or forget it. The notes stay small (the answer says how much room is left)."""
            return await _off_loop(lambda: memory.remember(add, change, to, forget))

        tools.append(
            Tool.from_function(
                remember, name="remember", annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False)
            )
        )
    return tools


def build(memory: Memory) -> MCPServer[Any]:
    async def status() -> Status:
        return await anyio.to_thread.run_sync(memory.status)

    resource = FunctionResource(
        uri=STATUS_URI,
        name="status",
        description="Documents, chunks, how many are embedded, files left out and why, the index's size.",
        mime_type="application/json",
        fn=status,
    )
    return MCPServer(
        "link-memory",
        instructions=(
            "Link Memory: search, read, list and follow links across this agent's documents, notes and "
            "conversations" + ("; remember keeps a note for every conversation." if memory.writable else ".")
        ),
        version=__version__,
        log_level="WARNING",
        tools=_tools(memory),
        resources=[resource],
    )
