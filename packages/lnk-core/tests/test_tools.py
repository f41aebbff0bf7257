"""The tool bridge: tools outside the sandbox served to the harness as MCP over HTTP, each call
logged, and every call not in the server's "don't ask first" list asking the owner first."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from world import TOOL, World, wait_until

from link_conformance import Reply, ToolCall
from lnk_testing.bodies import Growth, MiB, flood
from lnk_testing.processes import descendants


def _log(world: World, name: str) -> list[dict[str, Any]]:
    path = world.agent(name).logs / "tools.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _waiting(world: World, name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(world.lnk("agent", "approvals", name, "--json").stdout)
    return found


async def _call(url: str, call: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    async with Client(url) as client:
        result = await client.call_tool(call, arguments)
    return bool(result.is_error), " ".join(getattr(c, "text", "") for c in result.content)


async def _cant_forge(world: World, question: str) -> None:
    """What the harness reaches is its gateway: no path there answers a question or lists one."""
    spec = world.spec("work")
    base = f"http://127.0.0.1:{spec.gateway}"
    async with httpx.AsyncClient() as http:
        for path in (
            f"/{spec.secret}/approvals/{question}",
            f"/approvals/{question}",
            f"/{spec.secret}/_link/tools/words/approvals/{question}",
        ):
            assert (await http.post(base + path, json={"allow": True})).status_code == 404
        assert (await http.get(f"{base}/{spec.secret}/approvals")).status_code == 404


@pytest.fixture(scope="module")
def served() -> Iterator[World]:
    """A world with the owner's tool `words` (`lookup` not asked first) and `work` started, for the
    tests here that call it and read what the calls left: one start for them all, in one xdist worker
    (their group, `serving`). Each reads only what its own calls left."""
    made = World()
    try:
        made.lnk("sandbox", "tool", "add", "words", "--no-ask", "lookup", "--", *TOOL)
        made.start("work")
        yield made
    finally:
        made.close()


serving = pytest.mark.xdist_group("lnk-core-tools-served")
"""The tests sharing `served`: xdist (`--dist=loadgroup`) runs them in one worker."""


@serving
def test_a_tool_outside_the_sandbox_is_served_logged_and_asks_the_owner(served: World) -> None:
    ran, logged = len(served.tool_calls()), len(_log(served, "work"))  # the calls of the tests before
    listed = {tool["name"]: tool for tool in json.loads(served.lnk("sandbox", "tool", "list", "--json").stdout)}
    assert listed["words"]["no_ask"] == ["lookup"]  # beside the agent's scheduler, defined at its start
    tools = served.harness_settings("work").tools
    url = tools["words"]
    assert json.loads(served.spec("work").env["LNK_TOOLS"]) == tools  # the owner's, and the agent's scheduler
    assert sorted(tools) == sorted(["words", f"scheduler-{served.agent('work').id}"])

    async def scenario() -> None:
        async with Client(url) as client:
            names = {tool.name: tool.description for tool in (await client.list_tools()).tools}
        assert names == {"lookup": "Look a word up.", "erase": "Erase a word for good."}  # passed through as is

        assert await _call(url, "lookup", {"word": "cat"}) == (False, "cat means something")  # doesn't ask

        asking = asyncio.create_task(_call(url, "erase", {"word": "cat"}))
        waiting = await asyncio.to_thread(wait_until, lambda: _waiting(served, "work"), 20, "a question")
        assert waiting[0]["tool"] == "words" and waiting[0]["call"] == "erase"
        assert waiting[0]["arguments"] == {"word": "cat"}
        assert not asking.done()
        assert "erase cat" not in served.tool_calls()  # nothing ran before the owner answered
        await asyncio.to_thread(served.lnk, "agent", "approve", waiting[0]["id"], "work", "--deny")
        error, text = await asking
        assert error and "refused" in text
        assert "erase cat" not in served.tool_calls()

        asking = asyncio.create_task(_call(url, "erase", {"word": "dog"}))
        waiting = await asyncio.to_thread(wait_until, lambda: _waiting(served, "work"), 20, "a question")
        await _cant_forge(served, waiting[0]["id"])
        assert not asking.done()
        await asyncio.to_thread(served.lnk, "agent", "approve", waiting[0]["id"], "work")
        assert await asking == (False, "erased dog")

    asyncio.run(scenario())
    assert served.tool_calls()[ran:] == ["lookup cat", "erase dog"]
    decisions = [(e["call"], e["decision"], e["ok"]) for e in _log(served, "work")[logged:]]
    assert decisions == [("lookup", "no-ask", True), ("erase", "denied", False), ("erase", "allowed", True)]
    assert "erase" in served.lnk("agent", "logs", "work", "--tools").stdout


def _mapped(pid: int) -> set[str]:
    """The shared objects (compiled modules) a process has loaded."""
    lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return {line.split()[-1] for line in lines if ".so" in line}


def _sdk_only() -> set[str]:
    """What loading the tool bridge adds to a supervisor's shared objects: the MCP SDK's compiled
    modules (a cryptography library for its client's sign-in), seen in an interpreter of its own."""
    seen = """
import json, lnk.gateway, lnk.supervisor
def mapped(): return {line.split()[-1] for line in open("/proc/self/maps") if ".so" in line}
before = mapped()
import lnk.toolbridge
print(json.dumps(sorted(mapped() - before)))
"""
    done = subprocess.run([sys.executable, "-c", seen], capture_output=True, text=True, check=True)
    added: set[str] = set(json.loads(done.stdout))
    assert added, "the tool bridge loads no compiled module of its own: this test needs another sign"
    return added


def test_the_tool_bridge_loads_at_the_first_tool_request_and_answers_those_made_at_once(world: World) -> None:
    """A start pays nothing for the MCP SDK until the harness reaches a tool: an agent whose harness
    never lists its tools never loads it. The first requests, made at once, are all answered."""
    world.start("work")
    tools = world.harness_settings("work").tools
    assert list(tools) == [f"scheduler-{world.agent('work').id}"]  # the scheduler's, as every agent's
    supervisor, sdk = world.state("work").pid, _sdk_only()
    assert world.lnk("agent", "status", "work").returncode == 0
    assert not sdk & _mapped(supervisor)

    async def at_once() -> list[tuple[bool, str]]:
        return list(await asyncio.gather(*(_call(url, "schedules", {}) for url in [*tools.values()] * 3)))

    said = asyncio.run(at_once())
    assert [error for error, _ in said] == [False] * 3, said
    assert sdk <= _mapped(supervisor)
    assert [entry["call"] for entry in _log(world, "work")] == ["schedules"] * 3


@serving
def test_lnk_agent_chat_asks_the_owner_in_the_terminal(served: World) -> None:
    for answer, ran in (("n", False), ("y", True)):
        served.provider.script(
            Reply(tool_calls=[ToolCall("erase", {"word": "old"})]),
            lambda recorded: Reply(text=f"The tool said: {recorded.json['messages'][-1]['content']}"),
        )
        chat = served.lnk("agent", "chat", "work", "-m", "erase old", input=f"{answer}\n")
        assert "words wants to run erase" in chat.stderr
        assert ("erase old" in served.tool_calls()) is ran
        assert ("The tool said: erased old" in chat.stdout) is ran
        if not ran:
            assert "refused" in chat.stdout


def test_tool_names_and_commands_are_checked(world: World) -> None:
    for name in ("lnk-words", "link.words", "memory-abc", "Bad Name"):
        assert "can't name a tool" in world.lnk("sandbox", "tool", "add", name, "--", *TOOL, ok=False).stderr
    missing = world.lnk("sandbox", "tool", "add", "gone", "--", "no-such-program-here", ok=False)
    assert "not on PATH" in missing.stderr
    both = world.lnk("sandbox", "tool", "add", "x", "--url", "http://127.0.0.1:1/mcp", "--", *TOOL, ok=False)
    assert "only one" in both.stderr
    unknown = world.lnk("sandbox", "tool", "remove", "nothing", ok=False)
    assert "no tool 'nothing'" in unknown.stderr
    world.lnk("sandbox", "tool", "add", "words", "--", *TOOL)
    world.lnk("sandbox", "tool", "remove", "words")
    assert json.loads(world.lnk("sandbox", "tool", "list", "--json").stdout) == []


def test_a_tool_server_that_ended_is_started_again_and_only_a_reading_call_is_made_again(world: World) -> None:
    world.lnk("sandbox", "tool", "add", "words", "--no-ask", "lookup", "--no-ask", "erase", "--", *TOOL)
    world.start("work")
    url = world.harness_settings("work").tools["words"]
    end = Path(world.env["TOOL_RECORD"] + ".end")

    async def scenario() -> list[tuple[bool, str]]:
        said = [await _call(url, "lookup", {"word": "cat"})]
        end.touch()  # the server ends as the next call reaches it
        said.append(await _call(url, "lookup", {"word": "dog"}))  # only reads: made again on a new server
        end.touch()
        said.append(await _call(url, "erase", {"word": "owl"}))  # changes something: not made again
        said.append(await _call(url, "erase", {"word": "owl"}))  # the owner's agent asks again: a new server
        return said

    said = asyncio.run(scenario())
    assert [error for error, _ in said] == [False, False, True, False]
    assert "not made again" in said[2][1]
    ran = world.tool_runs()
    assert [text for text, _ in ran] == ["lookup cat", "lookup dog", "erase owl"]
    assert len({pid for _, pid in ran}) == 3  # each end, a server started again
    logged = [(entry["call"], entry["ok"]) for entry in _log(world, "work")]
    assert logged == [("lookup", True), ("lookup", True), ("erase", False), ("erase", True)]


@serving
def test_a_body_far_over_the_cap_is_refused_while_read_by_the_tool_bridge_and_the_control_socket(
    served: World,
) -> None:
    """Sent without a length, 200 MB is refused at the cap, before lnk holds more than a few MiB
    of it; what is served there goes on answering."""
    url = served.harness_settings("work").tools["words"]
    supervisor = served.state("work").pid
    mcp = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    socket = httpx.HTTPTransport(uds=str(served.agent("work").run.control))
    with (
        httpx.Client(timeout=60) as gateway,
        httpx.Client(transport=socket, base_url="http://lnk", timeout=60) as local,
    ):
        # Its servers load after the agent counts as running: their modules aren't the body's growth.
        assert local.get("/approvals").json() == []
        for client, path, headers in ((gateway, url, mcp), (local, "/approvals/anything", {})):
            with Growth(supervisor) as growth:
                response = flood(client, path, size=200 * MiB, headers=headers)
            assert response.status_code == 413, f"{path}: {response.status_code} {response.text[:200]}"
            assert growth.grew < 6 * MiB, f"{path}: lnk grew {growth.grew / MiB:.1f} MiB reading a body it refused"
        assert local.get("/approvals").json() == []
    assert asyncio.run(_call(url, "lookup", {"word": "cat"})) == (False, "cat means something")


def _serving(world: World) -> list[int]:
    """The agent's scheduler tool servers (`lnk-scheduler serve`, which its tool bridge starts)."""
    return [pid for pid in descendants([world.state("work").pid]) if _serves(pid)]


def _serves(pid: int) -> bool:
    try:
        argv = [arg.decode() for arg in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")]
    except OSError:
        return False
    return "serve" in argv and any(Path(arg).name == "lnk-scheduler" for arg in argv)


def _older_scheduler(world: World) -> None:
    """An lnk-scheduler from before `tools` (which typer refuses, as it did), found first on PATH."""
    older = world.root / "older"
    older.mkdir()
    program = older / "lnk-scheduler"
    real = Path(sys.executable).parent / "lnk-scheduler"
    program.write_text(
        f'#!/bin/sh\n[ "$1" = tools ] && {{ echo "No such command \'tools\'." >&2; exit 2; }}\nexec "{real}" "$@"\n'
    )
    program.chmod(0o755)
    world.env["PATH"] = f"{older}{os.pathsep}{world.env['PATH']}"


def test_a_new_agents_first_turn_lists_the_scheduler_from_its_release_and_a_call_starts_it(world: World) -> None:
    """`lnk-scheduler tools` answers the harness's first listing: no scheduler server runs for it.
    Its first call starts the server, which answers."""
    world.provider.script(
        Reply(text="Hello."), Reply(tool_calls=[ToolCall("schedules", {})]), Reply(text="Nothing is scheduled.")
    )
    world.start("work")
    assert world.chat("work", "hi").strip() == "Hello."
    assert {"schedule", "start_subagent", "schedules"} <= world.provider.requests[-1].tool_names
    assert not _serving(world)  # listed as its release prints it

    assert world.chat("work", "what is scheduled?").strip() == "Nothing is scheduled."
    assert _serving(world)  # the call started it
    said = world.provider.requests[-1].json["messages"][-1]
    assert said["role"] == "tool" and json.loads(said["content"]) == {"schedules": []}
    assert [(entry["call"], entry["ok"]) for entry in _log(world, "work")] == [("schedules", True)]


def test_a_plugins_tool_is_listed_from_its_release_and_its_server_starts_for_a_call(world: World) -> None:
    """An lnk-scheduler that can't print its listing is listed by its server, and that listing,
    kept from the first start, answers the next start's: its server starts only for a call (a tool
    of the owner's is always listed by its server)."""
    _older_scheduler(world)
    world.lnk("sandbox", "tool", "add", "words", "--no-ask", "lookup", "--", *TOOL)
    world.start("work")
    tools = world.harness_settings("work").tools
    scheduler = tools[f"scheduler-{world.agent('work').id}"]

    async def listed(url: str) -> list[str]:
        async with Client(url) as client:
            return sorted(tool.name for tool in (await client.list_tools()).tools)

    first = asyncio.run(listed(scheduler))
    assert "schedule" in first and "start_subagent" in first
    assert _serving(world)  # nothing was kept yet, and `tools` failed: its server listed it

    world.lnk("agent", "restart", "work", "--no-sandbox")
    tools = world.harness_settings("work").tools
    assert asyncio.run(listed(tools[f"scheduler-{world.agent('work').id}"])) == first
    assert not _serving(world)  # listed from what its release listed before
    assert asyncio.run(listed(tools["words"])) == ["erase", "lookup"]  # the owner's tool: by its server

    error, said = asyncio.run(_call(tools[f"scheduler-{world.agent('work').id}"], "schedules", {}))
    assert not error, said
    assert _serving(world)  # a call starts it

    answers = world.layout.config / "cache" / "answers"
    assert list(answers.glob("*-tools-scheduler-*.json"))
    world.lnk("agent", "delete", "work", "--yes")
    assert not list(answers.glob("*-tools-*.json"))  # what its tools listed goes with the agent
