"""Whether a start runs its harness in a sandbox, and what the owner allowed it beyond the defaults.

A harness runs in a sandbox unless the owner said otherwise, in one of two ways: `--no-sandbox`
for one start, or granting `unsandboxed` to the harness when it asked for it (its `needs`). A
machine whose machine.toml says `unsandboxed = false` forbids both. What the harness needs beyond
the defaults (permissions, risks) is asked of the owner here, in the terminal of the start, and
the answer (the Decision) says what was granted and which risks are allowed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from link_plugin.errors import LinkError
from link_plugin.harness import Needs
from link_plugin.sandbox import Decision
from lnk.agents import Agent
from lnk.harnesses import Harness
from lnk.machine import load_machine
from lnk.plugins import require
from lnk.sandboxing import SANDBOX, ask_needs


class SandboxOptions(Protocol):
    """What the owner said at the start: --no-sandbox, --yes, --allow-unsandboxed."""

    no_sandbox: bool
    yes: bool
    allow_unsandboxed: bool


def _forbidden(hint: str | None = None) -> LinkError:
    return LinkError(
        "This machine forbids running an agent without a sandbox (unsandboxed = false in machine.toml).", hint
    )


def check_allowed(agent: Agent, options: SandboxOptions) -> None:
    """--no-sandbox on a machine that forbids it fails before anything else is done."""
    if options.no_sandbox and load_machine(agent.layout).unsandboxed is False:
        raise _forbidden("Start it without --no-sandbox.")


def choose_sandbox(
    agent: Agent,
    harness: Harness,
    needs: Needs,
    options: SandboxOptions,
    say: Callable[[str], None],
) -> tuple[bool, Decision]:
    """Ask for what the harness needs beyond the defaults; whether it runs in a sandbox, and the answer."""
    decision = Decision()
    if needs.permissions or needs.risks:
        decision = ask_needs(agent, harness.name, needs, yes=options.yes, allow_unsandboxed=options.allow_unsandboxed)
    sandboxed = not options.no_sandbox and "unsandboxed" not in decision.granted
    if not sandboxed and load_machine(agent.layout).unsandboxed is False:
        raise _forbidden()
    if not sandboxed:
        why = "for this start (--no-sandbox)" if options.no_sandbox else f"as granted to {harness.name}"
        say(f"[yellow]{agent.name} runs without a sandbox {why}: it reads and writes all you can.[/yellow]")
    else:
        require(SANDBOX)
    return sandboxed, decision
