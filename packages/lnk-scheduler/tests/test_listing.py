"""`lnk-scheduler tools` prints exactly what `serve` lists, so a listing answered from it (as Link
answers a harness's first one) is the server's own."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from lnk_scheduler.commands import app
from lnk_scheduler.listing import shipped, written
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import ListToolsResult
from typer.testing import CliRunner

from link_plugin.memory import ENV_AGENT_ID
from link_plugin.scheduler import ENV_AGENTS, ENV_NARROWS

PROGRAM = str(Path(sys.executable).parent / "lnk-scheduler")


def test_tools_prints_exactly_what_the_running_server_lists(tmp_path: Path) -> None:
    """After changing a tool: `python -m lnk_scheduler.listing` writes the file anew."""
    peers = {"home": {"id": "homeagent002", "state": str(tmp_path / "home")}}
    server = StdioServerParameters(
        command=PROGRAM,
        args=["serve", "--state", str(tmp_path / "work")],
        # An agent's own settings, as Link gives them: the listing is the same for every agent.
        env={"PATH": os.environ["PATH"], ENV_AGENT_ID: "workagent001", ENV_AGENTS: json.dumps(peers), ENV_NARROWS: "1"},
    )

    async def listed() -> ListToolsResult:
        async with Client(server, read_timeout_seconds=60) as client:
            return await client.list_tools()

    served = asyncio.run(asyncio.wait_for(listed(), 120))
    printed = subprocess.run([PROGRAM, "tools"], capture_output=True, text=True, check=True, timeout=60)
    assert printed.stdout == written(served), "the shipped listing is stale: run `python -m lnk_scheduler.listing`"
    assert ListToolsResult.model_validate_json(printed.stdout) == served
    names = {tool.name for tool in served.tools}
    assert names == {"start_subagent", "schedule", "schedules", "cancel", "message_agent"}


def test_typer_answers_tools_as_the_bare_command_line_does() -> None:
    """`tools` among options goes through the typer app (lnk_scheduler.commands): the same file."""
    answered = CliRunner().invoke(app, ["tools"])
    assert answered.exit_code == 0 and answered.output == shipped()
