"""A session as Link runs it: QMD's tools over the agent's memory and conversations, its index in the
engine's state, nothing written anywhere else, and what changed found at the next session."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from link_plugin import memory as contract
from link_plugin.layout import AgentFolder


def _command(folder: AgentFolder, state: Path, notes: bool) -> contract.MemoryCommand:
    env = {**os.environ, contract.ENV_AGENT_ID: "qmdagent0001", contract.ENV_OWNER: "me@here"}
    if notes:
        env[contract.ENV_NOTES] = str(folder.notes)
    done = subprocess.run(
        ["lnk-qmd", "command", str(folder.root), str(state)], env=env, capture_output=True, text=True, check=True
    )
    return contract.MemoryCommand.model_validate_json(done.stdout)


def _ask(answer: contract.MemoryCommand, calls: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[Any]]:
    server = StdioServerParameters(
        command=answer.argv[0], args=answer.argv[1:], env={**answer.env, "PATH": os.environ["PATH"]}
    )

    async def scenario() -> tuple[set[str], list[Any]]:
        async with Client(server, read_timeout_seconds=120) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
            return tools, results

    return asyncio.run(asyncio.wait_for(scenario(), 300))


def _words(query: str) -> dict[str, Any]:
    """A search by words alone: what QMD answers without a model (see the README)."""
    return {"searches": [{"type": "lex", "query": query}], "rerank": False}


def _files(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime for p in sorted(root.rglob("*"))}


def test_qmd_answers_from_the_agents_memory_and_conversations(tmp_path: Path) -> None:
    folder = AgentFolder(tmp_path / "agent")
    folder.create()
    (folder.memory / "lease.md").write_text("# Lease\n\nThe flat's lease ends in March; the narwhal poster stays.\n")
    (folder.memory / "trips").mkdir()
    (folder.memory / "trips" / "lisbon.md").write_text("# Lisbon\n\nTrain to the airport at six.\n")
    (folder.chats / "telegram:1").mkdir()
    (folder.chats / "telegram:1" / "conversation.md").write_text("**You**: the narwhal is my favourite animal\n")
    (folder.chats / "telegram:1" / "turn.json").write_text('{"narwhal": true}')
    (folder.home / "work" / "draft.md").write_text("# Draft\n\nnarwhal draft, not memory\n")
    state = folder.memory_state("qmd")
    state.mkdir(parents=True)
    before = _files(folder.home)

    answer = _command(folder, state, notes=True)
    assert answer.notes is None and answer.writes == []
    tools, (found, lease) = _ask(
        answer,
        [("query", _words("narwhal")), ("get", {"file": "memory/lease.md"})],
    )
    assert tools == {"query", "get", "multi_get", "status"} and set(answer.no_ask) == tools
    files = sorted(hit["file"] for hit in found.structured_content["results"])
    assert files == ["chats/telegram:1/conversation.md", "memory/lease.md"]
    assert "lease ends in March" in json.dumps(lease.model_dump(mode="json"))
    assert not found.is_error
    # QMD wrote only in the engine's state: the agent's folder is as it was, notes untouched.
    assert _files(folder.home) == before and not folder.notes.exists()
    assert (state / "index.sqlite").is_file()

    (folder.memory / "seal.md").write_text("# Seal\n\nA new note about the narwhal's cousin.\n")
    _, (again, plain) = _ask(
        _command(folder, state, notes=False), [("query", _words("cousin")), ("query", {"query": "cousin"})]
    )
    assert [hit["file"] for hit in again.structured_content["results"]] == ["memory/seal.md"]
    # A plain query asks a model to expand and rerank it: none is installed, and QMD says so.
    assert plain.is_error and "NoBinaryFoundError" in plain.content[0].text
