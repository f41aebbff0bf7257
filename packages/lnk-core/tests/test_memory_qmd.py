"""An outside engine through the contract: `lnk agent memory use qmd` gives the agent QMD's own tools
at $LNK_MEMORY, through the tool bridge, installed on first use (QMD from npm, by lnk-qmd)."""

from __future__ import annotations

import asyncio
import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import SANDBOX_BIN
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from world import World

from link_plugin.sandbox import SandboxRequest
from lnk import memory
from lnk.agents import Agent
from lnk.runstate import RunSpec
from lnk.tool_targets import tool_target
from lnk.toolbridge import Target
from lnk.tooldefs import ToolDef, find_tool

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("lnk_qmd") is None, reason="lnk-qmd (adapters/lnk-qmd) isn't installed beside lnk"
)


@pytest.fixture(scope="module", autouse=True)
def _qmd_installed() -> None:
    """QMD installed once outside any sandbox, as lnk-qmd's own tests do: this machine reaches npm's
    registry only through a certificate authority of its own, which a sandbox (started with a
    clean environment) doesn't carry, so the install on first use below finds it done. One
    install at a time: the tests of this file may run in two processes at once."""
    lock = Path(tempfile.gettempdir()) / "lnk-qmd-install.lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        done = subprocess.run(
            [str(Path(sys.executable).with_name("lnk-qmd")), "install"],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    assert done.returncode == 0, done.stderr


def _target(agent: Agent, tool: ToolDef) -> Target:
    """How the bridge starts the memory tool of a sandboxed agent."""
    spec = RunSpec(
        agent="work", id=agent.id, owner=agent.settings.owner, harness="mini", adapter="lnk-mini",
        harness_home="/", sandboxed=True, mode="detached", ports=[1, 2], gateway=2, secret="s",
        argv=["x"], env={}, cwd="/", settings_file="/", lnk="0",
    )  # fmt: skip
    return tool_target(agent, spec, tool)


def test_qmd_serves_the_agent_through_the_tool_bridge(world: World) -> None:
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    said = world.lnk("agent", "memory", "use", "qmd", "work", timeout=900)
    agent = world.agent("work")
    assert agent.settings.memory == "qmd" and f"memory-{agent.id}" in said.stderr
    (agent.folder.memory / "lease.md").write_text("# Lease\n\nThe flat's lease ends in March.\n")
    world.start("work")
    url = world.harness_settings("work").tools[f"memory-{agent.id}"]
    environ = Path(f"/proc/{world.harness_pid('work')}/environ").read_bytes().split(b"\0")
    assert f"LNK_MEMORY={url}".encode() in environ

    async def use() -> tuple[set[str], dict[str, object]]:
        async with Client(url) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            found = await client.call_tool("query", {"searches": [{"type": "lex", "query": "lease"}], "rerank": False})
        return names, found.structured_content or {}

    names, found = asyncio.run(use())
    assert names == {"query", "get", "multi_get", "status"}  # QMD's own, untranslated
    assert [hit["file"] for hit in found["results"]] == ["memory/lease.md"]  # type: ignore[index]
    # Its index is in the engine's state, never in the agent's files.
    assert (agent.folder.memory_state("qmd") / "index.sqlite").is_file()
    assert sorted(p.name for p in agent.folder.memory.iterdir()) == ["lease.md"]


def test_qmd_runs_in_the_memory_sandbox_reading_its_own_program(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    world.with_sandbox()
    agent = world.agent("work").with_settings(memory="qmd")
    agent.save()
    tool = memory.define(agent, notes_writable=True)
    assert tool is not None and tool.sandboxed
    monkeypatch.setenv("PATH", world.env["PATH"])
    target = _target(agent, tool)
    assert not isinstance(target, str)
    request = SandboxRequest.model_validate_json(Path(target.args[2]).read_text())
    assert request.mode == "tool" and request.argv == tool.argv
    # QMD writes its state alone (no notes: it offers no remember), and reads the agent's folders.
    assert request.writes == [str(agent.folder.memory_state("qmd"))]
    assert str(agent.folder.home) in request.reads and str(agent.folder.chats) in request.reads
    assert str(world.layout.config) not in json.dumps(request.model_dump())
    # Its program: lnk's environment, where lnk-qmd keeps QMD (share/lnk-qmd) and the Node it pins.
    assert sys.prefix in request.reads


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="the memory sandbox is bubblewrap's")
def test_qmd_answers_from_inside_its_memory_sandbox(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tool as the bridge starts it for a sandboxed agent: lnk-sandbox (the real one) running the
    session in the memory sandbox, which reads lnk's environment, where QMD and its Node are."""
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    world.lnk("agent", "memory", "use", "qmd", "work", timeout=900)
    agent = world.agent("work")
    (agent.folder.memory / "lease.md").write_text("# Lease\n\nThe flat's lease ends in March.\n")
    tool = find_tool(world.layout, f"memory-{agent.id}")
    assert tool is not None
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for name, value in world.env.items():
        monkeypatch.setenv(name, value)
    target = _target(agent, tool)
    assert not isinstance(target, str) and Path(target.command).name == "lnk-sandbox"
    assert Path(target.command).parent != SANDBOX_BIN  # the real one, not the tests' double

    async def use() -> tuple[set[str], dict[str, object]]:
        server = StdioServerParameters(command=target.command, args=target.args, env=dict(os.environ))
        async with Client(server, read_timeout_seconds=120) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            found = await client.call_tool("query", {"searches": [{"type": "lex", "query": "lease"}], "rerank": False})
        return names, found.structured_content or {}

    names, found = asyncio.run(asyncio.wait_for(use(), 300))
    assert names == {"query", "get", "multi_get", "status"}
    assert [hit["file"] for hit in found["results"]] == ["memory/lease.md"]  # type: ignore[index]
