"""Tools that run outside every harness's sandbox, served to harnesses through lnk's tool bridge.

Each is an MCP server: a command speaking MCP over stdio (wrapped by the bridge), or an address
serving MCP over HTTP. Definitions live in ~/.config/lnk/tools/<name>.toml, which no sandbox reaches.
An agent's memory is one of them, `memory-<agent id>`.
"""

from __future__ import annotations

import re
import time

from pydantic import Field, model_validator

from link_plugin.errors import LinkError
from link_plugin.files import load_toml, save_toml
from link_plugin.layout import Layout
from link_plugin.model import Model
from lnk import kept
from lnk.known import reserved

_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
LINKS_OWN = ("memory-", "scheduler-")
"""Tool names Link gives an agent's own tools."""


class ToolDef(Model):
    name: str
    argv: list[str] = Field(default_factory=list)
    """An MCP server over stdio, wrapped by the bridge."""
    url: str | None = None
    """Or an MCP server over streamable HTTP, passed through."""
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    no_ask: list[str] = Field(default_factory=list)
    """Calls that don't ask the owner first; every other call does."""
    agents: list[str] | None = None
    """The agents given the tool (by name); None: every agent here."""
    sandboxed: bool = False
    """Runs in a sandbox of its own (lnk-sandbox, mode tool) when its agent runs sandboxed: memory."""
    reads: list[str] = Field(default_factory=list)
    writes: list[str] = Field(default_factory=list)
    lists: list[str] = Field(default_factory=list)
    """A command printing what its server lists (an MCP `tools/list` result) in its program's
    release, without starting it (the scheduler's `lnk-scheduler tools`): a harness's first listing
    is answered from it. Without it, or when it fails, the server is started to list."""
    model_port: int | None = None
    stamp: str | None = None
    """What it was defined from (memory): defined again when that changes."""
    added: float = Field(default_factory=time.time)

    @model_validator(mode="after")
    def _one_server(self) -> ToolDef:
        if bool(self.argv) == bool(self.url):
            raise ValueError("a tool is either a command (argv) or an address (url)")
        return self

    def given_to(self, agent: str) -> bool:
        return self.agents is None or agent in self.agents


def check_tool_name(name: str) -> str:
    if not _NAME.match(name) or reserved(name) or name.startswith(LINKS_OWN):
        raise LinkError(
            f"{name!r} can't name a tool.",
            "Use lowercase letters, digits, '-', '_' or '.', not starting link., lnk-, memory- or scheduler-.",
        )
    return name


def load_tools(layout: Layout) -> list[ToolDef]:
    folder = layout.config / "tools"
    if not folder.is_dir():
        return []
    return [load_toml(path, ToolDef) for path in sorted(folder.glob("*.toml"))]


def find_tool(layout: Layout, name: str) -> ToolDef | None:
    path = layout.config / "tools" / f"{name}.toml"
    return load_toml(path, ToolDef) if path.is_file() else None


def save_tool(layout: Layout, tool: ToolDef) -> None:
    save_toml(layout.config / "tools" / f"{tool.name}.toml", tool)


def listing_question(name: str) -> str:
    """What a tool lists is kept (lnk.kept) as the answer to this question: the tool bridge keeps it,
    and it goes with the tool."""
    return f"tools-{name}"


def remove_tool(layout: Layout, name: str) -> bool:
    kept.forget(layout, listing_question(name))
    path = layout.config / "tools" / f"{name}.toml"
    if not path.exists():
        return False
    path.unlink()
    return True


def remove_own_tools(layout: Layout, agent_id: str) -> None:
    """Remove the tools Link defined for the agent (its memory, its scheduler): once it is deleted or
    gone elsewhere, nothing of it is left in the tools folder."""
    for own in LINKS_OWN:
        remove_tool(layout, f"{own}{agent_id}")


def tools_for(layout: Layout, agent: str) -> list[ToolDef]:
    return [tool for tool in load_tools(layout) if tool.given_to(agent)]
