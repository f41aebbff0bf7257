"""What a start hands the agent's services (spec.json) and what they say of themselves (state-*.json).

Both live in the agent's run folder under ~/.config/lnk, 0600: the spec holds the endpoint key,
which only lnk's own processes (the supervisor, the bridges, `lnk agent chat`) read.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from pydantic import Field

from link_plugin.channel import EndpointRef
from link_plugin.files import write_atomic
from link_plugin.model import Model
from link_plugin.sandbox import SandboxRequest
from lnk.agents import Agent
from lnk.runfiles import alive
from lnk.tooldefs import ToolDef

Mode = Literal["detached", "foreground", "systemd"]
PARTS = ("harness", "bridges")


class RunSpec(Model):
    agent: str
    id: str
    owner: str
    harness: str
    adapter: str
    """The adapter's executable, asked `health` while the harness runs."""
    harness_home: str
    sandboxed: bool
    no_sandbox: bool = False
    """Started with --no-sandbox: lnk's own restarts (a new channel, memory) keep it for this run."""
    mode: Mode
    ports: list[int]
    gateway: int
    """The block's last port: lnk's gateway (tools, the model's key) when the harness runs unsandboxed."""
    secret: str
    """The gateway's path prefix: only what was handed the harness's settings can reach it."""
    provider: str | None = None
    """The hosted provider the gateway adds a key for, when unsandboxed."""
    endpoint: EndpointRef | None = None
    argv: list[str]
    env: dict[str, str]
    cwd: str
    request: SandboxRequest | None = None
    tools: list[ToolDef] = Field(default_factory=list)
    tool_urls: dict[str, str] = Field(default_factory=dict)
    bridges: list[str] = Field(default_factory=list)
    settings_file: str
    lnk: str
    made: float = Field(default_factory=time.time)


class Child(Model):
    pid: int | None = None
    state: Literal["starting", "running", "restarting", "failed", "stopped"] = "starting"
    restarts: int = 0
    since: float = Field(default_factory=time.time)
    exit: int | None = None
    detail: str = ""


class PartState(Model):
    pid: int
    state: Literal["starting", "running", "failed", "stopped"] = "starting"
    mode: Mode
    started: float = Field(default_factory=time.time)
    error: str | None = None
    children: dict[str, Child] = Field(default_factory=dict)


def write_spec(agent: Agent, spec: RunSpec) -> None:
    agent.run.create()
    write_atomic(agent.run.spec, spec.model_dump_json(indent=2))


def read_spec(agent: Agent) -> RunSpec | None:
    try:
        return RunSpec.model_validate_json(agent.run.spec.read_text())
    except (OSError, ValueError):
        return None


def write_state(path: Path, state: PartState) -> None:
    write_atomic(path, state.model_dump_json(indent=2))


def read_state(path: Path) -> PartState | None:
    try:
        return PartState.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None


def live_state(agent: Agent, part: str) -> PartState | None:
    """The part's state while its process runs; None once it's gone."""
    state = read_state(agent.run.state(part))
    if state is None or state.state == "stopped" or not alive(state.pid):
        return None
    return state
