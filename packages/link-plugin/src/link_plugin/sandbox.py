"""The sandbox's interface: `lnk-sandbox <command>`, what the core asks of it.

lnk-sandbox is Link's own (not a third party's plugin) but meets the core only here, like every
other part. It reads the agent's grants itself (`sandbox.toml`, the harness's grants file,
`machine.toml`) from Link's settings folder, which no sandbox ever shows.

    lnk-sandbox contract                      {kind: sandbox, version, name}
    lnk-sandbox run --request FILE            run a SandboxRequest; exits with the command's code
    lnk-sandbox run --agent NAME [--harness H] -- CMD...   the same, built from the agent's settings
    lnk-sandbox check --agent NAME [--harness H] [--json]  try each permission from inside; print what is open
    lnk-sandbox needs --agent NAME --harness H --needs FILE [--yes] [--allow-unsandboxed]
                                              ask the owner for what the harness needs (a terminal)
    lnk-sandbox allow|deny --agent NAME ITEM  change the agent's grants (ITEM: a permission,
                                              `tcp host:port`, or `host NAME`)
    lnk-sandbox harness allow|deny --harness H ITEM [--needs FILE]
    lnk-sandbox harness repermit --harness H [ITEM]
    lnk-sandbox grants --agent NAME [--harness H] --json   the grants in force
    lnk-sandbox permissions --json            this OS's permissions, each as it works here
"""

from __future__ import annotations

from pydantic import Field

from link_plugin.answers import Answer
from link_plugin.harness import Needs
from link_plugin.model import Model
from link_plugin.sandbox_terms import ANY_HOST, PROXY_PORT, TOOLS_PATH, Mode, proxy_url, tool_url


class SandboxRequest(Answer):
    """What to run, and as whom. Written by the core to a file `run --request` reads."""

    agent: str
    """The agent's name (its settings folder); the sandbox reads its ID and grants from there."""
    mode: Mode = "harness"
    """harness: the running harness; tool: a tool outside the harness's sandbox (the memory
    engine); setup: install/configure/link, with a proxy reaching only `hosts`; health: the
    health check, reaching only the agent's `ports` on this machine's loopback."""
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
    """For setup: the adapter's hosts (`*` for any). None: the agent's own host list applies."""
    ports: list[int] = Field(default_factory=list)
    """The agent's own ports: reachable on its loopback, and published for the bridge."""
    model_port: int | None = None
    """A local model server's port on this machine's loopback, which the harness may reach."""
    no_sandbox: bool = False
    """This start runs unsandboxed (lnk agent start --no-sandbox); refused where machine.toml forbids it."""
    tools: list[str] | None = None
    """The tools the proxy passes on to the tool bridge; None: every tool the bridge serves."""
    wire_keys: bool = True
    """The proxy adds the agent's model key for known providers (lnk agent keys wire); False: it
    adds none and the harness holds its own."""
    proxy_port: int | None = Field(default=None, ge=1, le=65535)
    """Where the proxy answers: inside the sandbox on Linux (default PROXY_PORT), on this machine's
    loopback on macOS (the last port of the agent's block)."""


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
    proxied: bool = True
    """Whether the harness runs behind its proxy (False with lan or without a sandbox)."""
    risks: list[str] = Field(default_factory=list)
    """The harness's risks the owner allowed."""
    files_read: list[str] = Field(default_factory=list)
    """Home folders kept read-only ([files] read in sandbox.toml)."""
    warnings: list[str] = Field(default_factory=list)
    """Grants that don't hold as written (a host list with lan), said to the owner."""


class PermissionInfo(Model):
    name: str
    on_by_default: bool
    what: str
    """What it opens, as it works on this OS."""


class Permissions(Answer):
    """The answer of `permissions --json`."""

    os: str
    """linux or macos: the OS the descriptions are of."""
    permissions: list[PermissionInfo]


class Check(Answer):
    """The answer of `check`: each permission tried from inside the sandbox."""

    results: dict[str, bool]
    """name -> open from inside."""
    details: dict[str, str] = Field(default_factory=dict)
    sandboxed: bool = True
    """False when the grants run it without a sandbox: then everything is open."""


__all__ = [
    "ANY_HOST",
    "PROXY_PORT",
    "TOOLS_PATH",
    "Check",
    "Decision",
    "Grants",
    "Mode",
    "Needs",
    "PermissionInfo",
    "Permissions",
    "SandboxRequest",
    "proxy_url",
    "tool_url",
]
