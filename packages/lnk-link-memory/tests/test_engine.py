"""One engine per owner: sessions over a unix socket, each answered from its own agent's folder."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import struct
import time
from pathlib import Path

import anyio.to_thread
import pytest
from conftest import wait_for, write
from lnk_link_memory.sockets import Hello, address
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from link_plugin import memory as contract
from link_plugin.calls import PluginProgram
from link_plugin.contract import Kind
from link_plugin.layout import AgentFolder


def _command(folder: AgentFolder, owner: str, notes: bool = True) -> contract.MemoryCommand:
    env = {contract.ENV_OWNER: owner, contract.ENV_AGENT_ID: folder.root.name, contract.ENV_EMBEDDINGS: "none"}
    if notes:
        env[contract.ENV_NOTES] = str(folder.notes)
    answer = PluginProgram("lnk-link-memory").ask_as(
        contract.MemoryCommand, Kind.MEMORY, "command", (str(folder.root), str(folder.memory_state("link"))), env=env
    )
    assert isinstance(answer, contract.MemoryCommand)
    return answer


def _server(answer: contract.MemoryCommand) -> StdioServerParameters:
    return StdioServerParameters(
        command=answer.argv[0], args=answer.argv[1:], env={**answer.env, "PATH": os.environ["PATH"]}
    )


def _socket(answer: contract.MemoryCommand) -> Path:
    return Path(answer.argv[answer.argv.index("--socket") + 1])


def _engine_pid(path: Path) -> int:
    with socket.socket(socket.AF_UNIX) as client, address(path) as where:
        client.connect(where)
        pid, _, _ = struct.unpack("3i", client.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        return int(pid)


def _agent(root: Path, name: str, text: str) -> AgentFolder:
    folder = AgentFolder(root / "Agents" / name)
    folder.create()
    write(folder.memory / "fact.md", text)
    return folder


async def _search(client: Client, query: str) -> list[str]:
    for _ in range(100):
        result = await client.call_tool("search", {"query": query})
        paths = [hit["path"] for hit in (result.structured_content or {}).get("results", [])]
        if paths:
            return paths
        await asyncio.sleep(0.1)
    return []


def test_agents_of_one_owner_share_one_engine_each_answered_from_its_own_folder(tmp_path: Path) -> None:
    ana = _agent(tmp_path, "ana", "# Fact\n\nthe aardvark lives here\n")
    bo = _agent(tmp_path, "bo", "# Fact\n\nthe bonobo lives here\n")
    first, second = _command(ana, "me@here"), _command(bo, "me@here")
    assert _socket(first) == _socket(second)

    async def scenario() -> tuple[list[str], list[str], list[str], int, int, set[str]]:
        async with (
            Client(_server(first), read_timeout_seconds=60) as a,
            Client(_server(second), read_timeout_seconds=60) as b,
        ):
            pids = (_engine_pid(_socket(first)), _engine_pid(_socket(second)))
            tools = {tool.name for tool in (await a.list_tools()).tools}
            found_a = await _search(a, "aardvark")
            found_b = await _search(b, "aardvark")
            found_b_own = await _search(b, "bonobo")
            return found_a, found_b, found_b_own, *pids, tools

    found_a, found_b, found_b_own, pid_a, pid_b, tools = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert pid_a == pid_b
    assert found_a == ["memory/fact.md"] and found_b == [] and found_b_own == ["memory/fact.md"]
    assert tools == {"search", "read", "list", "links", "remember"}
    wait_for(lambda: not _socket(first).exists(), timeout=30)


def test_two_owners_never_share_an_engine_and_a_stranger_is_refused(tmp_path: Path) -> None:
    ana = _agent(tmp_path, "ana", "# Fact\n\nthe aardvark\n")
    mine, theirs = _command(ana, "me@here"), _command(ana, "them@there")
    assert _socket(mine) != _socket(theirs)

    async def scenario() -> str:
        async with Client(_server(mine), read_timeout_seconds=60) as client:
            await client.list_tools()
            with socket.socket(socket.AF_UNIX) as intruder, address(_socket(mine)) as where:
                intruder.connect(where)
                hello = Hello(folder=str(ana.root), state=str(tmp_path / "s"), owner="them@there", notes_max=4096)
                intruder.sendall(hello.model_dump_json().encode() + b"\n")
                return intruder.makefile("rb").readline().decode()

    reply = json.loads(asyncio.run(asyncio.wait_for(scenario(), 120)))
    assert reply["ok"] is False and "me@here" in reply["error"]
    assert oct(_socket(mine).parent.stat().st_mode & 0o777) == "0o700"


def test_each_owners_engine_folder_is_made_by_command_beside_the_agents_root(tmp_path: Path) -> None:
    """A sandbox binds only a folder that exists, shows nothing but agents' folders in their root,
    and must never hold another owner's socket."""
    ana = _agent(tmp_path, "ana", "# Fact\n\nthe aardvark\n")
    mine, theirs = _command(ana, "me@here"), _command(ana, "them@there")
    folders = [_socket(answer).parent for answer in (mine, theirs)]
    for answer, folder in zip((mine, theirs), folders, strict=True):
        assert folder.is_dir() and oct(folder.stat().st_mode & 0o777) == "0o700"
        assert str(folder) in answer.writes
        assert not folder.is_relative_to(ana.root.parent), "inside the agents' root, it would be taken for an agent"
    assert folders[0] != folders[1] and not folders[0].is_relative_to(folders[1])


def test_an_engine_told_to_end_ends_at_once_and_removes_its_socket(tmp_path: Path) -> None:
    """As the sandbox it was started in ends: the next session must not find a socket nobody serves."""
    answer = _command(_agent(tmp_path, "ana", "# Fact\n\nthe aardvark\n"), "me@here", notes=False)

    async def scenario() -> None:
        async with Client(_server(answer), read_timeout_seconds=60) as client:
            await client.list_tools()
            os.kill(_engine_pid(_socket(answer)), signal.SIGTERM)
            await anyio.to_thread.run_sync(lambda: wait_for(lambda: not _socket(answer).exists(), timeout=10))

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_no_remember_without_a_notes_file_and_the_engine_ends_after_its_last_session(tmp_path: Path) -> None:
    ana = _agent(tmp_path, "ana", "# Fact\n\nthe aardvark\n")
    answer = _command(ana, "me@here", notes=False)
    assert answer.notes is None and "remember" not in answer.no_ask

    async def scenario() -> set[str]:
        async with Client(_server(answer), read_timeout_seconds=60) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert asyncio.run(asyncio.wait_for(scenario(), 120)) == {"search", "read", "list", "links"}
    left = time.monotonic()
    wait_for(lambda: not _socket(answer).exists(), timeout=30)
    assert time.monotonic() - left < 15
    assert not ana.notes.exists()


def _in_sandbox(answer: contract.MemoryCommand, agents: Path, shown: AgentFolder) -> StdioServerParameters:
    """The session in bubblewrap, its agents' root showing only `shown`, as an agent's memory sandbox
    made before another agent of the owner existed."""
    runtime = _socket(answer).parent
    bwrap = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", str(agents)]
    bwrap += ["--bind", str(shown.root), str(shown.root), "--bind", str(runtime), str(runtime)]
    bwrap += ["--unshare-pid", "--die-with-parent", "--", *answer.argv]
    return StdioServerParameters(command="bwrap", args=bwrap, env={**answer.env, "PATH": os.environ["PATH"]})


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (apt install bubblewrap)")
def test_an_engine_that_cant_see_a_sessions_folder_gives_way_and_its_notes_reach_the_disk(tmp_path: Path) -> None:
    ana = _agent(tmp_path, "ana", "# Fact\n\nthe aardvark lives here\n")
    cy = _agent(tmp_path, "cy", "# Fact\n\nthe capybara lives here\n")
    first, second = _command(ana, "me@here"), _command(cy, "me@here")

    async def scenario() -> tuple[int, int, list[str], str, bool, list[str]]:
        async with Client(_in_sandbox(first, tmp_path / "Agents", ana), read_timeout_seconds=60) as a:
            assert await _search(a, "aardvark") == ["memory/fact.md"]
            before = _engine_pid(_socket(first))
            async with Client(_server(second), read_timeout_seconds=60) as c:
                after = _engine_pid(_socket(second))
                found = await _search(c, "capybara")
                kept = await c.call_tool("remember", {"add": "my sister is called Ana"})
                try:  # the engine ana's session passed to gave way: that session ended
                    await a.call_tool("search", {"query": "aardvark"})
                    ended = False
                except Exception:
                    ended = True
                async with Client(_in_sandbox(first, tmp_path / "Agents", ana), read_timeout_seconds=60) as again:
                    found_again = await _search(again, "aardvark")
        return before, after, found, str(kept.content[0]), ended, found_again

    before, after, found, kept, ended, found_again = asyncio.run(asyncio.wait_for(scenario(), 180))
    assert before != after and found == ["memory/fact.md"] and ended
    assert "my sister is called Ana" in cy.notes.read_text() and "error" not in kept.lower()
    assert (cy.memory_state("link") / "index.db").is_file()
    assert found_again == ["memory/fact.md"]  # ana's next session is served by the engine that sees all
