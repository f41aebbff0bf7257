"""7. `lnk agent stop`, `status --json` and `delete`: nothing of the agent runs on, and nothing of Link
is left but what the user keeps (their files, put aside) and the machine's own settings."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

from conftest import AGENT

from lnk_e2e.machine import Machine
from lnk_e2e.waiting import wait_for

MACHINE_WIDE = re.compile(
    r"\.config/lnk/(machine\.toml|\.install\.lock|checked\.json|harnesses/[a-z0-9-]+\.toml"
    r"|cache/answers/[0-9a-f]{24}-[a-z]+(-\d+)?\.json)"
    r"|Link/\.link-memory/[0-9a-f]{16}/engine\.(lock|log)"
)
"""Link's settings for the machine, what the owner granted each harness (OpenClaw's risks: they hold
for every agent on that harness), what it kept of each plugin release's answers and of the files a
sandbox is built from (a deleted agent's leave with it), and the owner's memory engine's lock and
log (one engine serves all of an owner's agents), not any agent's: they stay for the next agent."""


def free(port: int) -> bool:
    """Nothing listens on the port (connections closed a moment ago may linger, as they do)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if not p.is_dir()}


def test_stop_status_and_delete_leave_nothing_running_and_nothing_of_link_behind(machine: Machine, agent: str) -> None:
    running = machine.status(AGENT)
    assert running["running"] is True
    agent_id, ports = running["id"], running["ports"]
    notes = (machine.folder(AGENT) / "Home" / "memory" / "notes.md").read_text()

    machine.lnk("agent", "stop", AGENT)
    stopped = machine.status(AGENT)
    assert stopped["running"] is False, stopped
    # The memory engine ends a few seconds after its last session.
    wait_for(
        lambda: not machine.processes(),
        30,
        lambda: f"every process of the agent ending (still running: {[p.command for p in machine.processes()]})",
    )
    assert all(free(port) for port in ports), ports

    machine.lnk("agent", "delete", AGENT, "--yes")
    assert json.loads(machine.lnk("agent", "list", "--json").stdout) == []
    gone = machine.lnk("agent", "status", AGENT, "--json", ok=False)
    assert gone.returncode != 0 and AGENT in gone.stderr
    assert not machine.processes()

    kept = machine.agents / ".kept" / f"{AGENT}-{agent_id}" / "Home"
    assert (kept / "memory" / "notes.md").read_text() == notes
    assert (kept / "memory" / "boiler-service.pdf").is_file()
    home = Path(machine.home)
    kept_files = {str(p.relative_to(home)) for p in kept.rglob("*")}
    leftover = {path for path in files_under(home) - kept_files if not MACHINE_WIDE.fullmatch(path)}
    assert not leftover, f"Link left these behind: {sorted(leftover)}"
