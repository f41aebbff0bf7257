"""An agent's run folder, and the chat's own reading of it.

`RunFolder` names what a running agent's services keep (~/.config/lnk/agents/.run/<id>/). Its
files are read through their models (`lnk.runstate`); `lnk agent chat -m` to an agent already
running reads the three it needs here instead, as plain JSON and TOML, so that its message costs
no pydantic: the agent's ID (settings.toml), whether its harness runs (state-harness.json) and
its endpoint (spec.json). Each is read strictly: whatever isn't exactly as lnk writes it gives
None, and the command line's chat answers, reading them all through their models (and saying
what is wrong, or starting the agent). The endpoint's proof is checked as for any chat, by
`link_plugin.endpoint`.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

from link_plugin.layout import Layout

_ID = re.compile(r"^[a-z0-9]{12}$")
"""An agent's ID, as `link_plugin.settings.AgentSettings` reads it."""
_RUNNING = ("starting", "running", "failed")
"""A part's states but `stopped` (`lnk.runstate.PartState`)."""
_MODES = ("detached", "foreground", "systemd")


class RunFolder(NamedTuple):
    """~/.config/lnk/agents/.run/<id>/: what a running agent's services keep (0700)."""

    root: Path

    @property
    def spec(self) -> Path:
        return self.root / "spec.json"

    def state(self, part: str) -> Path:
        return self.root / f"state-{part}.json"

    @property
    def control(self) -> Path:
        """The supervisor's control socket: status and the owner's answers to tool calls."""
        return self.root / "control.sock"

    @property
    def requests(self) -> Path:
        return self.root / "requests"

    def create(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.root.chmod(0o700)


def run_folder(layout: Layout, agent_id: str) -> RunFolder:
    return RunFolder(layout.config / "agents" / ".run" / agent_id)


def exists(pid: int) -> bool:
    """The process is there and not a zombie waiting for its parent."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def alive(pid: int) -> bool:
    """The process runs and is lnk's (a pid reused by another program doesn't count)."""
    if not exists(pid):
        return False
    try:
        return b"lnk" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


class Endpoint(NamedTuple):
    """A harness's endpoint as spec.json holds it: what a client of it uses of
    `link_plugin.channel.EndpointRef`."""

    url: str
    key: str
    proof: bool


class Running(NamedTuple):
    """An agent whose harness runs: who it is, and where a chat talks to it."""

    name: str
    id: str
    endpoint: Endpoint
    control: Path
    """Its supervisor's control socket, where tool calls wait for the owner's yes."""


def _json(path: Path) -> dict[str, Any] | None:
    try:
        found = json.loads(path.read_bytes().decode())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _agent_id(layout: Layout, name: str) -> str | None:
    try:
        settings = tomllib.loads(layout.agent_config(name).settings.read_bytes().decode())
    except (OSError, ValueError):  # TOMLDecodeError and UnicodeDecodeError among them
        return None
    found = settings.get("id")
    return found if isinstance(found, str) and _ID.match(found) else None


def _harness_runs(run: RunFolder) -> bool:
    state = _json(run.state("harness"))
    if state is None:
        return False
    pid, now, mode = state.get("pid"), state.get("state", "starting"), state.get("mode")
    return type(pid) is int and now in _RUNNING and mode in _MODES and alive(pid)


def _endpoint(run: RunFolder) -> Endpoint | None:
    spec = _json(run.spec)
    found = spec.get("endpoint") if spec is not None else None
    if not isinstance(found, dict):
        return None
    url, key, proof = found.get("url"), found.get("key"), found.get("proof", True)
    if not isinstance(url, str) or not isinstance(key, str) or not isinstance(proof, bool):
        return None
    return Endpoint(url, key, proof)


def running_chat(layout: Layout, name: str) -> Running | None:
    """The agent `name` when its harness runs with an endpoint, read as described above; None
    for anything else."""
    agent_id = _agent_id(layout, name)
    if agent_id is None:
        return None
    run = run_folder(layout, agent_id)
    endpoint = _endpoint(run) if _harness_runs(run) else None
    return None if endpoint is None else Running(name, agent_id, endpoint, run.control)
