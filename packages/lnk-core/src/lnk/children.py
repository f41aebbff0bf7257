"""The supervisor's children as processes: how one is started, and how it is ended.

Each child (the harness, a channel's bridge) runs in a session of its own, so that ending it ends
everything it started too (a sandbox, the program in it): `end` signals the whole process group.
On Linux a child also ends when the supervisor does, even a supervisor killed with SIGKILL, which
leaves no orphan holding the agent's ports. Its output goes to a log the owner reads with
`lnk agent logs`, and `tail` gives a failure's last lines to show them at once.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sys
from asyncio.subprocess import Process
from contextlib import suppress
from pathlib import Path

from pydantic import BaseModel

from link_plugin.waits import within

STOP_GRACE = 5.0
"""Seconds between SIGTERM and SIGKILL when a child is ended."""


def _die_with_parent() -> None:
    """In the child, before exec: end when the supervisor does, even if it is killed."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


async def spawn(argv: list[str], env: dict[str, str], cwd: str | None, log: Path, stdin: int | None) -> Process:
    """Start a child in its own session, its output appended to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            cwd=cwd,
            stdin=stdin,
            stdout=out,
            stderr=out,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


async def spawn_told(argv: list[str], log: Path, told: BaseModel) -> Process:
    """Start a child that is told everything on its stdin as one JSON line (a bridge's spec, with
    its secrets; the scheduler's runner's), never in its arguments or environment."""
    process = await spawn(argv, dict(os.environ), None, log, asyncio.subprocess.PIPE)
    assert process.stdin is not None
    process.stdin.write(told.model_dump_json().encode() + b"\n")
    await process.stdin.drain()
    process.stdin.close()
    return process


async def alive(process: Process) -> bool:
    """A child that says nothing of itself (a bridge, the runner) is ready while its process runs."""
    return process.returncode is None


async def end(process: Process) -> None:
    """SIGTERM to the child's process group, then SIGKILL after a grace period."""
    if process.returncode is not None:
        return
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        await within(process.wait(), STOP_GRACE)
    except TimeoutError:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()


def tail(path: Path, lines: int = 12) -> str:
    """The last lines of a child's log, or nothing when there is none."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
