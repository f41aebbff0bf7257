"""A harness's set-up before its start: `install` once per release, `configure` at every start.

Both run in the sandbox when the harness does, through a proxy that reaches only the hosts the
adapter names (its answer to `hosts`); without a sandbox they run here. An adapter whose
description says it doesn't answer one has nothing to do there. `install` runs again for a new
home and for a new adapter program (a new release rewrites it): `.lnk-installed` in the
harness's home remembers the program it ran for.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.files import write_atomic
from link_plugin.harness import Description, Done
from link_plugin.sandbox import SandboxRequest
from lnk.agents import Agent
from lnk.harnesses import Harness
from lnk.sandboxing import answer_in_sandbox, program_reads

INSTALLED_FILE = ".lnk-installed"


def set_up(
    agent: Agent, harness: Harness, command: str, env: dict[str, str], sandboxed: bool, description: Description
) -> Done:
    """install or configure: in the sandbox, through a proxy reaching only the adapter's hosts.
    An adapter that doesn't answer it (its description says so) has nothing to do there."""
    if not harness.answers(command, description):
        return Done()
    if not sandboxed:
        return harness.step(command, env)
    hosts = harness.hosts(env, description)
    request = SandboxRequest(
        agent=agent.name,
        mode="setup",
        harness=harness.name,
        argv=[harness.path, command],
        env=env,
        cwd=str(harness.home),
        reads=program_reads([harness.path]),
        hosts=hosts,
    )
    done = answer_in_sandbox(agent, request, Done, f"setup-{command}") or Done()
    if not done.ok:
        raise LinkError(f"lnk-{harness.name} {command} failed: {done.detail or 'it gave no reason'}.")
    return done


def install_once(
    agent: Agent,
    harness: Harness,
    env: dict[str, str],
    sandboxed: bool,
    description: Description,
    say: Callable[[str], None],
) -> None:
    """install runs for a new home and for a new adapter program (a new release rewrites it)."""
    if not harness.answers("install", description):
        return
    path = Path(harness.path)
    stat = path.stat()
    installed = json.dumps([str(path), stat.st_size, stat.st_mtime_ns])
    marker = harness.home / INSTALLED_FILE
    if marker.exists() and marker.read_text() == installed:
        return
    say(f"Installing {harness.name} for {agent.name} (once per release)...")
    set_up(agent, harness, "install", env, sandboxed, description)
    write_atomic(marker, installed, mode=0o644)
