"""Running an agent's services: systemd --user units where systemd runs, else a detached supervisor.

`lnk agent start --foreground` runs the supervisor in the terminal instead, until Ctrl-C. Every
service is named by the agent's ID (lnk-agent-<id>.service, lnk-bridge-<id>.service).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.files import write_atomic
from lnk.agents import Agent
from lnk.runfiles import alive, exists
from lnk.runstate import PARTS, Mode, PartState, live_state, read_state

ENV_SERVICES = "LNK_SERVICES"
"""detached or systemd: how services run, when the machine's own choice isn't wanted (tests, containers)."""
WAIT = float(os.environ.get("LNK_START_TIMEOUT", "120")) + 30.0


def systemd_runs() -> bool:
    if shutil.which("systemctl") is None:
        return False
    try:
        done = subprocess.run(
            ["systemctl", "--user", "is-system-running"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.stdout.strip() in ("running", "degraded", "starting")


def service_mode() -> Mode:
    chosen = os.environ.get(ENV_SERVICES)
    if chosen in ("detached", "systemd"):
        return chosen  # type: ignore[return-value]
    return "systemd" if systemd_runs() else "detached"


def supervisor_argv(agent: Agent, parts: tuple[str, ...]) -> list[str]:
    argv = [sys.executable, "-m", "lnk.supervisor", agent.name]
    for part in parts:
        argv += ["--part", part]
    return argv


# --- systemd --user -------------------------------------------------------------------------


def unit_name(agent: Agent, part: str) -> str:
    return f"lnk-{'agent' if part == 'harness' else 'bridge'}-{agent.id}.service"


def unit_folder() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "systemd" / "user"


def unit_text(agent: Agent, part: str) -> str:
    what = "its harness and tools" if part == "harness" else "its channels' bridges"
    lines = ["[Unit]", f"Description=Link agent {agent.name} ({agent.id}): {what}"]
    if part == "bridges":
        harness = unit_name(agent, "harness")
        lines += [f"BindsTo={harness}", f"After={harness}"]
    passed = {name: os.environ[name] for name in ("LNK_CONFIG_DIR", "LNK_AGENTS_DIR", "PATH") if name in os.environ}
    lines += ["", "[Service]", "Type=simple"]
    lines += [f'Environment="{name}={value}"' for name, value in sorted(passed.items())]
    lines += [
        "ExecStart=" + " ".join(supervisor_argv(agent, (part,))),
        "Restart=always",
        "RestartSec=2",
        "KillMode=control-group",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def _systemctl(*args: str) -> None:
    done = subprocess.run(["systemctl", "--user", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LinkError(f"systemctl --user {' '.join(args)} failed: {done.stderr.strip()}")


def _start_units(agent: Agent, parts: tuple[str, ...]) -> None:
    folder = unit_folder()
    for part in parts:
        write_atomic(folder / unit_name(agent, part), unit_text(agent, part), mode=0o644)
    _systemctl("daemon-reload")
    _systemctl("enable", "--now", *(unit_name(agent, part) for part in parts))


def _units(agent: Agent) -> list[str]:
    return [unit_name(agent, part) for part in PARTS if (unit_folder() / unit_name(agent, part)).exists()]


def remove_units(agent: Agent) -> None:
    units = _units(agent)
    if not units:
        return
    with suppress(LinkError):
        _systemctl("disable", "--now", *units)
    for unit in units:
        (unit_folder() / unit).unlink(missing_ok=True)
    with suppress(LinkError):
        _systemctl("daemon-reload")


# --- starting and stopping ----------------------------------------------------------------


def running(agent: Agent) -> PartState | None:
    return live_state(agent, "harness")


def start_services(agent: Agent, mode: Mode) -> None:
    """Start the agent's services in the background and wait until its harness answers."""
    for part in PARTS:
        agent.run.state(part).unlink(missing_ok=True)
    agent.logs.mkdir(parents=True, exist_ok=True)
    if mode == "systemd":
        _start_units(agent, PARTS)
        process = None
    else:
        with (agent.logs / "agent.log").open("ab") as log:
            process = subprocess.Popen(
                supervisor_argv(agent, PARTS),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                cwd=agent.config.root,
            )
    _wait_started(agent, process)


def _wait_started(agent: Agent, process: subprocess.Popen[bytes] | None) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        state = read_state(agent.run.state("harness"))
        if state is not None and state.state == "running":
            return
        if state is not None and state.state == "failed":
            raise LinkError(f"{agent.name} didn't start: {state.error}", f"`lnk agent logs {agent.name}` has more.")
        if process is not None and process.poll() is not None:
            tail = "\n".join((agent.logs / "agent.log").read_text(errors="replace").splitlines()[-12:])
            raise LinkError(f"{agent.name}'s supervisor ended (exit {process.returncode}) before it started.", tail)
        time.sleep(0.05)
    stop_services(agent)
    raise LinkError(f"{agent.name} didn't answer within {WAIT:.0f} s.", f"`lnk agent logs {agent.name}` has more.")


def stop_services(agent: Agent, timeout: float = 20.0) -> bool:
    """Stop every process of the agent's; False when nothing ran."""
    if _units(agent):
        remove_units(agent)
    supervisors: set[int] = set()
    children: set[int] = set()
    for part in PARTS:
        state = read_state(agent.run.state(part))
        if state is None or state.state == "stopped":
            continue
        if alive(state.pid):
            supervisors.add(state.pid)
        children.update(c.pid for c in state.children.values() if c.pid is not None and exists(c.pid))
    if not supervisors and not children:
        return False
    for pid in supervisors:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(exists(pid) for pid in supervisors | children):
        time.sleep(0.05)
    for pid in supervisors | children:
        if exists(pid):
            with suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    return True
