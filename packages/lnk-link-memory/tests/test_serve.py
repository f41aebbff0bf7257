"""`serve --folder DIR` for any MCP client, and `status --json`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

from conftest import write
from mcp import Client
from mcp.client.stdio import StdioServerParameters


def test_serve_a_plain_folder_over_stdio(tmp_path: Path) -> None:
    folder, state = tmp_path / "vault", tmp_path / "state"
    write(folder / "recipes" / "soup.md", "# Soup\n\nLeek and potato soup, see [[bread]].\n")
    write(folder / "bread.md", "# Bread\n\nSourdough every Sunday.\n")
    server = StdioServerParameters(
        command="lnk-link-memory",
        args=["serve", "--folder", str(folder), "--state", str(state), "--embeddings", "none"],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
    )

    async def scenario() -> tuple[set[str], list[str], dict[str, object], dict[str, object], str]:
        async with Client(server, read_timeout_seconds=60) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            paths: list[str] = []
            for _ in range(100):
                result = await client.call_tool("search", {"query": "leek soup"})
                paths = [hit["path"] for hit in (result.structured_content or {})["results"]]
                if paths:
                    break
                await asyncio.sleep(0.1)
            links = (await client.call_tool("links", {"path": "bread.md"})).structured_content or {}
            remembered = (await client.call_tool("remember", {"add": "buy flour"})).structured_content or {}
            status = await client.read_resource("memory://status")
            return tools, paths, links, remembered, status.contents[0].text  # type: ignore[union-attr]

    tools, paths, links, remembered, status = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert tools == {"search", "read", "list", "links", "remember"}
    assert paths == ["recipes/soup.md"]
    assert [entry["path"] for entry in links["linked_from"]] == ["recipes/soup.md"]  # type: ignore[index]
    assert remembered["notes"] == "notes.md" and (folder / "notes.md").read_text() == "- buy flour\n"
    assert json.loads(status)["documents"] == 3
    assert sorted(p.name for p in folder.rglob("*")) == ["bread.md", "notes.md", "recipes", "soup.md"]

    printed = subprocess.run(
        ["lnk-link-memory", "status", "--folder", str(folder), "--state", str(state), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    answer = json.loads(printed.stdout)
    assert answer["documents"] == 3 and answer["model"] == "none" and answer["index_bytes"] > 0
    assert answer["skipped"] == []


def test_serve_refuses_what_it_cant_serve(tmp_path: Path) -> None:
    missing = subprocess.run(
        ["lnk-link-memory", "serve", "--folder", str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert missing.returncode != 0 and "not a folder" in missing.stderr
    typo = subprocess.run(
        ["lnk-link-memory", "serve", "--folder", str(tmp_path), "--embeddings", "minilm-typo"],
        capture_output=True,
        text=True,
    )
    assert typo.returncode != 0 and "isn't an embedding model" in typo.stderr
    nothing = subprocess.run(
        ["lnk-link-memory", "status", "--folder", str(tmp_path), "--state", str(tmp_path / "s")],
        capture_output=True,
        text=True,
    )
    assert nothing.returncode == 1 and "No index" in nothing.stderr
