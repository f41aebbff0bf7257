"""The MCP server: the tools a model calls to start a subagent, schedule, list, cancel and message.

Each call reads who called from its `_meta` (the harness says the conversation's thread, hops
and tools) and answers what was kept, with the id a later call names it by.
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp_types import ToolAnnotations
from pydantic import Field

from link_plugin.scheduler import Scheduled, Schedules
from lnk_scheduler import __version__
from lnk_scheduler.store import Due
from lnk_scheduler.tool import Caller, CallError, Scheduler


def _caller(ctx: Context[Any, Any]) -> Caller:
    meta = ctx.request_context.meta
    return Caller.of(dict(meta) if meta is not None else None)


async def _made(call: Any) -> Any:
    try:
        return await anyio.to_thread.run_sync(call)
    except CallError as exc:
        raise ToolError(str(exc)) from None


def _tools(scheduler: Scheduler) -> list[Tool]:
    async def start_subagent(
        task: Annotated[str, Field(description="what the subagent is to do, said as you would to a person")],
        ctx: Context[Any, Any],
        tools: Annotated[
            list[str] | None,
            Field(description="the tools it may use, by name: yours or fewer, never more (all of yours without it)"),
        ] = None,
    ) -> Scheduled:
        """Start a subagent: a new conversation of yours given `task`, working on its own. Its answer
        comes back to this conversation as a message from it, when it is done."""
        caller = _caller(ctx)
        due: Due = await _made(lambda: scheduler.start_subagent(caller, task, tools))
        return due.scheduled()

    async def schedule(
        message: Annotated[str, Field(description="what you will be told when it is due: 'Remind the owner to ...'")],
        ctx: Context[Any, Any],
        at: Annotated[
            str | None,
            Field(
                description="when: an ISO 8601 date-time (2026-12-03T09:00, the owner's local time unless a zone "
                "is given) or a time today, such as 09:00 (tomorrow when it has passed); now without it"
            ),
        ] = None,
        repeat: Annotated[
            str | None,
            Field(description="to repeat from that time: an RFC 5545 RRULE (FREQ=DAILY, FREQ=WEEKLY;BYDAY=MO,FR)"),
        ] = None,
        title: Annotated[str | None, Field(description="a short name for lists")] = None,
    ) -> Scheduled:
        """Schedule a message to yourself at a time, or repeating. When it is due you are told it in a
        conversation of its own, and your answer there goes to the owner's own chat."""
        caller = _caller(ctx)
        due: Due = await _made(lambda: scheduler.schedule(caller, message, at, repeat, title))
        return due.scheduled()

    async def schedules() -> Schedules:
        """List your schedules, soonest first, with the id `cancel` takes."""
        found = await anyio.to_thread.run_sync(scheduler.schedules)
        return Schedules(schedules=[due.scheduled() for due in found])

    async def cancel(id: Annotated[str, Field(description="the schedule's id, as `schedules` lists it")]) -> Scheduled:
        """Cancel a schedule: it is said no more."""
        due: Due = await _made(lambda: scheduler.cancel(id))
        return due.scheduled()

    async def message_agent(
        agent: Annotated[str, Field(description="the other agent's name")],
        message: Annotated[str, Field(description="what to tell it")],
        ctx: Context[Any, Any],
    ) -> Scheduled:
        """Send a message to another of the owner's agents on this machine. It is told the message is
        yours; its answer goes to the owner's own chat, not back to you."""
        caller = _caller(ctx)
        due: Due = await _made(lambda: scheduler.message_agent(caller, agent, message))
        return due.scheduled(to=agent)

    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    acting = ToolAnnotations(read_only_hint=False, idempotent_hint=False, open_world_hint=False)
    return [
        Tool.from_function(start_subagent, name="start_subagent", annotations=acting),
        Tool.from_function(schedule, name="schedule", annotations=acting),
        Tool.from_function(schedules, name="schedules", annotations=reading),
        Tool.from_function(cancel, name="cancel", annotations=acting),
        Tool.from_function(message_agent, name="message_agent", annotations=acting),
    ]


def build(scheduler: Scheduler) -> MCPServer[Any]:
    return MCPServer(
        "link-scheduler",
        instructions=(
            "Link Scheduler: start a subagent with fewer tools, schedule a message to yourself at a time or "
            "repeating, list and cancel schedules, and message another of the owner's agents."
        ),
        version=__version__,
        log_level="WARNING",
        tools=_tools(scheduler),
    )
