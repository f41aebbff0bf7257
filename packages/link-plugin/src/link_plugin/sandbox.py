"""The sandbox's interface: `lnk-sandbox <command>`, what the core asks of it.

lnk-sandbox is Link's own (not a third party's plugin) but meets the core only here, like every
other part. It reads the agent's grants itself (`sandbox.toml`, the harness's grants file,
`machine.toml`) from Link's settings folder, which no sandbox ever shows.

    lnk-sandbox run --request FILE            run a SandboxRequest; exits with the command's code
    lnk-sandbox check --agent NAME [--json]   try each permission from inside; print what is open
    lnk-sandbox needs --agent NAME --harness H --needs FILE [--yes] [--allow-unsandboxed]
                                              ask the owner for what the harness needs (a terminal)
    lnk-sandbox allow|deny --agent NAME ITEM  change the agent's grants (ITEM: a permission,
                                              `tcp host:port`, or `host NAME`)
    lnk-sandbox harness allow|deny|repermit --harness H [ITEM]
    lnk-sandbox grants --agent NAME [--harness H] --json   the grants in force
    lnk-sandbox permissions --json            this OS's permissions, each as it works here
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from link_plugin.answers import Answer
from link_plugin.harness import Needs

TOOLS_PATH = "/_link/tools/"
"""Tools are served to a sandboxed harness on its proxy: http://<proxy>/_link/tools/<tool>/mcp."""


class SandboxRequest(Answer):
    """What to run, and as whom. Written by the core to a file `run --request` reads."""

    agent: str
    """The agent's name (its settings folder); the sandbox reads its ID and grants from there."""
    mode: Literal["harness", "tool", "setup"] = "harness"
    """harness: the running harness; tool: a tool outside the harness's sandbox (the memory
    engine); setup: install/configure/link, with a proxy reaching only `hosts`."""
    harness: str | None = None
    """The harness's name (its grants file), for mode harness and setup."""
    argv: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    writes: list[str] = Field(default_factory=list)
    """Folders it may write besides its own home/state (the adapter's `folders`, resolved)."""
    reads: list[str] = Field(default_factory=list)
    """Folders it may read besides the defaults (a tool's program and folder)."""
    hosts: list[str] | None = None
    """For setup: the adapter's hosts. None: the agent's own host list applies."""
    ports: list[int] = Field(default_factory=list)
    """The agent's own ports: reachable on its loopback, and published for the bridge."""
    model_port: int | None = None
    """A local model server's port on this machine's loopback, which the harness may reach."""
    no_sandbox: bool = False
    """This start runs unsandboxed (lnk agent start --no-sandbox); refused where machine.toml forbids it."""
    proxy_port: int | None = None
    """The loopback port inside the sandbox where the proxy's relay listens (the last of the agent's block).
    The core hands the harness its tools at http://127.0.0.1:<proxy_port>/_link/tools/<tool>/mcp, so the
    sandbox puts the proxy there. None: the sandbox picks the port."""


class Decision(Answer):
    """The answer of `needs`: what the owner allowed, now or before."""

    granted: list[str] = Field(default_factory=list)
    denied: list[str] = Field(default_factory=list)
    risks: list[str] = Field(default_factory=list)
    """Risks allowed: handed to the adapter as `allowed`."""
    asked: bool = False
    """Whether anything was asked this time (False: all answered before)."""


class Grants(Answer):
    """The grants in force for an agent running a harness."""

    permissions: dict[str, bool]
    """Every permission of this OS, on or off."""
    hosts: list[str] | None = None
    """The agent's host list; None: any host."""
    tcp: list[str] = Field(default_factory=list)
    """Named endpoints, host:port."""
    harness: list[str] = Field(default_factory=list)
    """What the harness's own layer adds while it runs."""
    sandboxed: bool = True
    mode: str = "bubblewrap"
    """bubblewrap, seatbelt, or none."""
    read_only: list[str] = Field(default_factory=list)
    """Folders of Home the agent may only read ([files] read), e.g. instructions: where instructions
    are read-only, Link names no notes file to the memory engine."""


class PermissionInfo(BaseModel):
    name: str
    on_by_default: bool
    what: str
    """What it opens, as it works on this OS."""


class Check(Answer):
    """The answer of `check`: each permission tried from inside the sandbox."""

    results: dict[str, bool]
    """name -> open from inside."""
    details: dict[str, str] = Field(default_factory=dict)


__all__ = ["Check", "Decision", "Grants", "Needs", "PermissionInfo", "SandboxRequest"]
