"""Tools: MCP servers passed through untranslated, answers capped, narrowed, remember kept to the owner."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import MAIN
from helpers import Harness, ask, events, say, settings_for, transcript, wait_until
from listing import tools_listed
from mcp_tools import BIG, ToolServers

from link_conformance.provider import Reply, StandInProvider, ToolCall
from link_plugin import wire
from link_plugin.harness import HarnessSettings
from link_plugin.wire import META_HOPS, META_THREAD
from lnk_harness.model import to_anthropic
from lnk_harness.tools import ANSWER_MAX, META_TOOLS


@pytest.fixture(scope="module")
def harness(
    tmp_path_factory: pytest.TempPathFactory, provider: StandInProvider, servers: ToolServers
) -> Iterator[Harness]:
    tools = {name: servers.address(name) for name in ("big", "meta")}
    settings = settings_for(tmp_path_factory.mktemp("tools"), MAIN, provider.url, tools=tools)
    env = {"LNK_MEMORY": servers.address("memory"), "LNK_TOOLS": json.dumps({"slow": servers.address("slow")})}
    with Harness([settings], env=env) as harness:
        tools_listed(harness, provider)
        yield harness


def offered(provider: StandInProvider) -> dict[str, dict[str, object]]:
    return {t["function"]["name"]: t["function"] for t in provider.requests[-1].json.get("tools") or []}


def test_every_tool_reaches_the_model_as_its_server_describes_it(harness: Harness, provider: StandInProvider) -> None:
    say(harness, "what can you do?", "kit:listing")
    tools = offered(provider)
    assert set(tools) == {"search", "remember", "wait", "dump", "whoami"}
    assert tools["search"]["description"] == "Search the agent's memory by words and meaning."
    schema = tools["search"]["parameters"]
    assert schema["properties"]["query"]["type"] == "string" and schema["required"] == ["query"]


def test_a_tool_call_goes_to_its_server_and_back_to_the_model(
    harness: Harness, provider: StandInProvider, servers: ToolServers
) -> None:
    provider.script(Reply(tool_calls=[ToolCall("search", {"query": "lease"})]), Reply(text="March."))
    assert say(harness, "when does my lease end?", "kit:search") == (200, "March.")
    assert servers.called("search")[-1] == {"query": "lease"}
    last = provider.requests[-1].json["messages"]
    assert last[-2]["tool_calls"][0]["function"]["name"] == "search"
    assert last[-1] == {"role": "tool", "tool_call_id": last[-2]["tool_calls"][0]["id"], "content": last[-1]["content"]}
    assert "the lease ends in March" in last[-1]["content"]
    transcript(harness.conversation("kit:search"), "when does my lease end?", "_Used `search`._", "March.")


def test_a_long_tool_answer_is_cut_at_32_kib_with_a_note(harness: Harness, provider: StandInProvider) -> None:
    provider.script(Reply(tool_calls=[ToolCall("dump", {})]), Reply(text="that was long"))
    say(harness, "dump it", "kit:big")
    answer = provider.requests[-1].json["messages"][-1]["content"]
    kept, _, note = answer.rpartition("\n")
    assert len(kept.encode()) == ANSWER_MAX
    assert "cut" in note and str(BIG) in note


def test_the_tool_is_told_the_conversations_tools(
    harness: Harness, provider: StandInProvider, servers: ToolServers
) -> None:
    provider.script(Reply(tool_calls=[ToolCall("whoami", {})]), Reply(text="ok"))
    asyncio.run(ask(harness.client(), "who?", "kit:meta", tools=frozenset({"meta", "memory"})))
    assert sorted(servers.metas[-1][META_TOOLS]) == ["memory", "meta"]
    assert servers.metas[-1][META_THREAD] == "kit:meta" and servers.metas[-1][META_HOPS] == 0


def test_the_tool_is_told_how_many_hops_a_message_from_someone_else_came(
    harness: Harness, provider: StandInProvider, servers: ToolServers
) -> None:
    provider.script(Reply(tool_calls=[ToolCall("whoami", {})]), Reply(text="ok"))
    sender = wire.Sender(who="agent:someone", hops=2)
    asyncio.run(ask(harness.client(), "who?", "agent:someone", sender=sender))
    assert servers.metas[-1][META_THREAD] == "agent:someone" and servers.metas[-1][META_HOPS] == 2


def test_narrowing_is_kept_beside_the_events_and_only_intersects(harness: Harness, provider: StandInProvider) -> None:
    client = harness.client()
    asyncio.run(ask(client, "your task", "kit:sub", tools=frozenset({"memory", "big"})))
    assert set(offered(provider)) == {"search", "dump"}, "a subagent's conversation is not the owner's: no remember"
    asyncio.run(ask(client, "later", "kit:sub", tools=frozenset({"big", "slow"})))
    assert set(offered(provider)) == {"dump"}
    folder = harness.conversation("kit:sub")
    assert json.loads((folder / "tools.json").read_text()) == {"tools": ["big"]}
    assert not any("tools" in json.dumps(e.get("took", "")) for e in events(folder))
    harness.restart()
    tools_listed(harness, provider)
    asyncio.run(ask(harness.client(), "after a restart", "kit:sub"))
    assert set(offered(provider)) == {"dump"}, "nothing widens it again, a restart included"


def test_a_call_to_a_tool_the_conversation_lacks_is_not_made(
    harness: Harness, provider: StandInProvider, servers: ToolServers
) -> None:
    before = len(servers.called("search"))
    provider.script(Reply(tool_calls=[ToolCall("search", {"query": "x"})]), Reply(text="no search here"))
    asyncio.run(ask(harness.client(), "search!", "kit:nosearch", tools=frozenset({"big"})))
    assert len(servers.called("search")) == before
    assert "no tool named search" in provider.requests[-1].json["messages"][-1]["content"]


def test_bad_arguments_are_answered_without_a_call(
    harness: Harness, provider: StandInProvider, servers: ToolServers
) -> None:
    before = len(servers.called("search"))
    provider.script(Reply(tool_calls=[ToolCall("search", {})]), Reply(text="retrying"))
    say(harness, "search with nothing", "kit:args")
    assert len(servers.called("search")) == before, "the server refused the call without its query"
    assert "query" in provider.requests[-1].json["messages"][-1]["content"].lower()


def test_a_tool_that_doesnt_answer_costs_its_tools_not_the_answer(tmp_path: Path, provider: StandInProvider) -> None:
    settings = settings_for(tmp_path, MAIN, provider.url, tools={"gone": "http://127.0.0.1:9/mcp"})
    provider.script(Reply(text="still here"))
    with Harness([settings]) as harness:
        assert say(harness, "hello", "kit:down") == (200, "still here")
        assert "tools" not in provider.requests[-1].json


def test_the_first_turn_after_a_start_is_offered_the_tools(
    tmp_path: Path, provider: StandInProvider, servers: ToolServers
) -> None:
    """A question asked days later, after a restart, is the first turn: it needs memory's search."""
    settings = settings_for(tmp_path, MAIN, provider.url, tools={"memory": servers.address("memory")})
    asked = len(provider.requests)
    with Harness([settings]) as harness:
        # Its MCP client loads and its tools are listed as it starts, before any message: a person's
        # first message comes later than that, however long both take on a loaded machine.
        wait_until(lambda: "the tools of memory are listed" in harness.output(), 60, "memory's tools listed")
        assert len(provider.requests) == asked, "listed as it started, not at a turn"
        provider.script(Reply(tool_calls=[ToolCall("search", {"query": "lease"})]), Reply(text="March."))
        assert say(harness, "when does my lease end?", "kit:first") == (200, "March.")
        assert servers.called("search")[-1] == {"query": "lease"}  # offered on the first turn, and called


def test_the_first_turn_doesnt_wait_for_a_tool_still_starting(
    tmp_path: Path, provider: StandInProvider, servers: ToolServers
) -> None:
    """Its tools come at a later turn, once listed; the answer never waits for them."""
    servers.late.opened.clear()
    settings = settings_for(tmp_path, MAIN, provider.url, tools={"late": servers.address("late")})
    with Harness([settings]) as harness:
        provider.script(Reply(text="right away"))
        assert say(harness, "hello", "kit:first") == (200, "right away")
        assert "tools" not in provider.requests[-1].json  # its listing is held: the model was asked without it
        assert say(harness, "and now?", "kit:first") == (200, "ok")
        assert "tools" not in provider.requests[-1].json  # still held: still no wait
        servers.late.opened.set()
        tools_listed(harness, provider)
        provider.script(Reply(tool_calls=[ToolCall("hello", {})]), Reply(text="it said hello"))
        assert say(harness, "say hello", "kit:first") == (200, "it said hello")
        assert servers.called("hello") == [{}]  # offered once listed, and the call made


def _listed_in_a_run(tmp_path: Path, provider: StandInProvider, servers: ToolServers) -> HarnessSettings:
    """Settings with the `late` server, whose tools a harness run listed (and kept), then ended."""
    servers.late.opened.set()
    settings = settings_for(tmp_path, MAIN, provider.url, tools={"late": servers.address("late")})
    with Harness([settings]) as harness:
        tools_listed(harness, provider)
    return settings


def test_after_a_restart_the_first_turn_is_offered_the_tools_listed_before_at_once(
    tmp_path: Path, provider: StandInProvider, servers: ToolServers
) -> None:
    """The last run's listing is offered while the server still starts, and asked again meanwhile."""
    settings = _listed_in_a_run(tmp_path, provider, servers)
    servers.late.opened.clear()
    try:
        with Harness([settings]) as harness:
            provider.script(Reply(text="right away"))
            assert say(harness, "hello", "kit:first") == (200, "right away")
            assert "hello" in offered(provider)  # kept from the last run: the held server wasn't waited for
            servers.late.opened.set()
            provider.script(Reply(tool_calls=[ToolCall("hello", {})]), Reply(text="it said hello"))
            assert say(harness, "say hello", "kit:first") == (200, "it said hello")
            assert servers.called("hello")[-1] == {}
    finally:
        servers.late.opened.set()


def test_a_listing_kept_for_another_address_is_not_offered(
    tmp_path: Path, provider: StandInProvider, servers: ToolServers
) -> None:
    settings = _listed_in_a_run(tmp_path, provider, servers)
    moved = settings.model_copy(update={"tools": {"late": "http://127.0.0.1:9/mcp"}})
    with Harness([moved]) as harness:
        provider.script(Reply(text="no tools"))
        assert say(harness, "hello", "kit:first") == (200, "no tools")
        assert "tools" not in provider.requests[-1].json


def test_without_tools_anthropic_is_told_earlier_calls_as_text() -> None:
    """Anthropic refuses tool blocks in a request defining no tools (none listed yet after a start)."""
    messages = [
        {"role": "user", "content": "when does the lease end?"},
        {"role": "assistant", "content": "", "tool_calls": [_call("c1", "search", '{"query": "lease"}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "March"},
        {"role": "assistant", "content": "In March."},
        {"role": "user", "content": "thanks"},
    ]
    with_tools = json.dumps(to_anthropic(messages))
    assert '"tool_use"' in with_tools and '"tool_result"' in with_tools
    told = to_anthropic(messages, with_tools=False)
    assert "tool_use" not in json.dumps(told) and "tool_result" not in json.dumps(told)
    assert told[1]["content"] == [{"type": "text", "text": '[called search with {"query": "lease"}]'}]
    assert told[2]["content"][0] == {"type": "text", "text": "[search answered: March]"}


def _call(call_id: str, name: str, arguments: str) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
