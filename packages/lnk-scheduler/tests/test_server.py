"""The tools over MCP, as a harness calls them: the official client, the call's `_meta` read."""

from __future__ import annotations

import json
from typing import Any

import pytest
from lnk_scheduler.server import build
from lnk_scheduler.store import Store
from lnk_scheduler.tool import Scheduler
from mcp import Client

from link_plugin import wire

META: Any = {wire.META_THREAD: "telegram:42", wire.META_HOPS: 0, wire.META_TOOLS: ["memory", "scheduler-main"]}


def _answer(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


@pytest.mark.anyio
async def test_the_tools_are_described_for_a_model(scheduler: Scheduler) -> None:
    async with Client(build(scheduler)) as client:
        listed = await client.list_tools()
    names = {tool.name: tool for tool in listed.tools}
    assert set(names) == {"start_subagent", "schedule", "schedules", "cancel", "message_agent"}
    assert all(tool.description for tool in listed.tools)
    assert "ctx" not in json.dumps(names["schedule"].input_schema)
    assert names["schedules"].annotations is not None and names["schedules"].annotations.read_only_hint


@pytest.mark.anyio
async def test_a_subagent_started_over_mcp_is_narrowed_by_the_calls_meta(scheduler: Scheduler, store: Store) -> None:
    async with Client(build(scheduler)) as client:
        started = _answer(await client.call_tool("start_subagent", {"task": "look it up"}, meta=META))
        wider = await client.call_tool("start_subagent", {"task": "x", "tools": ["shell"]}, meta=META)
    assert started["tools"] == ["memory", "scheduler-main"]
    assert wider.is_error and "shell" in wider.content[0].text
    assert [due.reply_to for due in store.all()] == ["telegram:42"]


@pytest.mark.anyio
async def test_schedule_list_and_cancel_over_mcp(scheduler: Scheduler) -> None:
    async with Client(build(scheduler)) as client:
        kept = _answer(await client.call_tool("schedule", {"message": "call the dentist", "at": "09:00"}, meta=META))
        listed = _answer(await client.call_tool("schedules", {}))
        _answer(await client.call_tool("cancel", {"id": kept["id"]}))
        after = _answer(await client.call_tool("schedules", {}))
    assert kept["at"] == "2026-12-02T09:00:00+00:00"
    assert [item["id"] for item in listed["schedules"]] == [kept["id"]]
    assert after["schedules"] == []
