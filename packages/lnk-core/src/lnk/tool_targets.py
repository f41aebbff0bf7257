"""Where the tool bridge reaches each of an agent's tools: a URL, or an MCP server it starts.

A tool with a URL is called there. A tool that runs as a program is started by the bridge on
first use, and how depends on who the tool is:

- a sandboxed tool (memory's engine) of a sandboxed agent runs in a sandbox of its own, under
  `lnk-sandbox run` with the request written to the agent's run folder, its model port and
  folders only what its definition says;
- a sandboxed tool of an agent started without a sandbox runs with only the environment its
  engine answered, on top of nothing: the owner's keys and tokens never reach it;
- a tool of the owner's own (`lnk sandbox tool add`) runs as the owner does, their environment and all.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from link_plugin.sandbox import SandboxRequest
from lnk.agents import Agent
from lnk.runstate import RunSpec
from lnk.sandboxing import run_argv, write_request
from lnk.tooldefs import ToolDef

if TYPE_CHECKING:
    from lnk.toolbridge import Target


def tool_target(agent: Agent, spec: RunSpec, tool: ToolDef) -> Target:
    from mcp import StdioServerParameters

    if tool.url is not None:
        return tool.url
    if tool.sandboxed and spec.sandboxed:
        request = SandboxRequest(
            agent=agent.name,
            mode="tool",
            argv=tool.argv,
            env=tool.env,
            cwd=tool.cwd,
            reads=tool.reads,
            writes=tool.writes,
            model_port=tool.model_port,
        )
        argv = run_argv(write_request(agent, request, f"tool-{tool.name}"))
        return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    # Memory's environment is the engine's answer on top of nothing; a tool of the owner's runs as they do.
    env = tool.env if tool.sandboxed else {**os.environ, **tool.env}
    return StdioServerParameters(command=tool.argv[0], args=tool.argv[1:], env=env, cwd=tool.cwd)
