"""Memory wiring: the engine's `command` answer becomes the agent's tool memory-<id>, at $LNK_MEMORY,
defined again only when what it was defined from changed, run in a sandbox of its own."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
from conftest import BIN, SANDBOX_BIN
from mcp import Client
from world import World

from link_plugin.sandbox import SandboxRequest
from lnk import memory
from lnk.runstate import RunSpec
from lnk.tool_targets import tool_target
from lnk.tooldefs import find_tool


def _commands(world: World, name: str) -> list[dict[str, object]]:
    path = world.agent(name).folder.memory_state("testmemory") / "commands.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_memory_start_defines_the_tool_the_harness_reaches_at_lnk_memory(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    said = world.lnk("agent", "memory", "start", "testmemory", "work")
    agent = world.agent("work")
    assert f"memory-{agent.id}" in said.stderr
    assert agent.settings.memory == "testmemory"
    (agent.folder.memory / "tax.md").write_text("# Tax\nThe tax number is 42.\n")
    world.start("work")

    given = _commands(world, "work")[-1]
    assert given["folder"] == str(agent.folder.root)
    assert given["state"] == str(agent.folder.memory_state("testmemory"))
    env = given["env"]
    assert isinstance(env, dict)
    assert env["LNK_AGENT_ID"] == agent.id and env["LNK_OWNER"] == agent.settings.owner
    assert env["LNK_NOTES"] == str(agent.folder.notes)  # its instructions are writable here

    url = world.harness_settings("work").tools[f"memory-{agent.id}"]
    environ = Path(f"/proc/{world.harness_pid('work')}/environ").read_bytes().split(b"\0")
    assert f"LNK_MEMORY={url}".encode() in environ

    async def use() -> tuple[set[str], str, str]:
        async with Client(url) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            found = await client.call_tool("search", {"query": "tax"})
            kept = await client.call_tool("remember", {"line": "likes tea"})
        return names, str(found.content[0]), str(kept.content[0])

    names, found, kept = asyncio.run(use())
    assert names == {"search", "remember"}
    assert "tax.md" in found and "kept" in kept  # neither asked: both are in the engine's no_ask
    assert agent.folder.notes.read_text() == "likes tea\n"
    status = json.loads(world.lnk("agent", "status", "work", "--json").stdout)
    assert status["memory"] == {
        "engine": "testmemory",
        "tool": f"memory-{agent.id}",
        "indexed": {"documents": 2, "embedded": 2},  # tax.md and the notes
    }
    assert "testmemory" in world.lnk("agent", "memory", "status", "work").stdout

    world.lnk("agent", "memory", "stop", "work")
    assert find_tool(world.layout, f"memory-{agent.id}") is None
    assert world.agent("work").settings.memory is None
    assert "LNK_MEMORY" not in world.spec("work").env  # it was restarted without memory


def test_the_tool_is_defined_again_only_when_something_changed(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    agent = world.agent("work").with_settings(memory="testmemory")
    agent.save()
    first = memory.define(agent, notes_writable=True)
    assert first is not None and len(_commands(world, "work")) == 1
    asked = agent.folder.memory_state("testmemory") / "asked"
    before = asked.read_text()
    assert memory.define(agent, notes_writable=True) == first
    assert len(_commands(world, "work")) == 1  # nothing changed: not asked again
    assert asked.read_text() == before  # nor asked anything else (its release is its program's)

    memory.define(agent, notes_writable=False)  # the settings for it changed
    assert len(_commands(world, "work")) == 2
    assert "LNK_NOTES" not in _commands(world, "work")[-1]["env"]  # type: ignore[operator]

    (world.layout.config / "tools" / f"memory-{agent.id}.toml").unlink()  # the tool is gone
    memory.define(agent, notes_writable=False)
    assert len(_commands(world, "work")) == 3

    engine = BIN / "lnk-testmemory"  # the engine changed (a rebuilt program keeps its version)
    os.utime(engine, ns=(time.time_ns(), time.time_ns() + 10**9))
    memory.define(agent, notes_writable=False)
    assert len(_commands(world, "work")) == 4


def test_memory_runs_in_a_sandbox_of_its_own_when_the_agent_is_sandboxed(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{SANDBOX_BIN}{os.pathsep}{os.environ['PATH']}")
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    agent = world.agent("work").with_settings(memory="testmemory")
    agent.save()
    tool = memory.define(agent, notes_writable=True)
    assert tool is not None
    spec = RunSpec(
        agent="work", id=agent.id, owner=agent.settings.owner, harness="mini", adapter="lnk-mini",
        harness_home="/", sandboxed=True, mode="detached", ports=[1, 2], gateway=2, secret="s",
        argv=["x"], env={}, cwd="/", settings_file="/", lnk="0",
    )  # fmt: skip
    target = tool_target(agent, spec, tool)
    assert not isinstance(target, str)
    assert Path(target.command).name == "lnk-sandbox" and target.args[:2] == ["run", "--request"]
    request = SandboxRequest.model_validate_json(Path(target.args[2]).read_text())
    assert request.mode == "tool" and request.agent == "work"
    assert request.argv == tool.argv and request.env == tool.env
    folder = agent.folder
    assert request.writes == [str(folder.memory_state("testmemory")), str(folder.memory)]
    assert str(folder.home) in request.reads and str(folder.chats) in request.reads
    assert str(world.layout.config) not in json.dumps(request.model_dump())  # Link's settings: never


def test_an_unknown_engine_names_the_known_ones(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    wrong = world.lnk("agent", "memory", "start", "nosuch", "work", ok=False)
    assert "no memory engine 'nosuch'" in wrong.stderr and "link" in wrong.stderr


def test_one_owners_engine_holds_every_folder_of_that_owner_and_no_other(world: World) -> None:
    """The first session starts the owner's one engine in its own sandbox, which serves every agent of
    the owner: so it reads each of their folders, and never another owner's."""
    for name in ("work", "home", "theirs"):
        world.lnk("agent", "keys", "set", "openai", name, "--stdin", input=world.key)
    world.agent("theirs").with_settings(owner="someone@else").save()
    home = world.agent("home").with_settings(memory="testmemory")
    home.save()
    assert memory.define(home, notes_writable=True) is not None
    work = world.agent("work").with_settings(memory="testmemory")
    work.save()
    tool = memory.define(work, notes_writable=True)
    assert tool is not None
    for agent in (work, home):
        assert {str(agent.folder.home), str(agent.folder.chats)} <= set(tool.reads)
        assert str(agent.folder.memory_state("testmemory")) in tool.writes
        assert str(agent.folder.memory) in tool.writes  # home's own memory tool writes its notes
    theirs = world.agent("theirs").folder
    assert not any(path.startswith(str(theirs.root)) for path in [*tool.reads, *tool.writes])
    assert _commands(world, "work")[-1]["env"]["LNK_NOTES_MAX"] == "4096"  # type: ignore[index]
