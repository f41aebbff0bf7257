"""`lnk agent backup` and `lnk agent restore` (lnk.backups does the work)."""

from __future__ import annotations

from typing import Annotated

import typer

from lnk import backups
from lnk.agents import DEFAULT_AGENT, Agent
from lnk.commands.agent import paused
from lnk.commands.common import AgentArg, agent, layout, say

FromOpt = Annotated[
    str | None,
    typer.Option("--from", help="The bucket its backups went to (a folder, or REMOTE:PATH); by default, its own."),
]


def backup(name: AgentArg = DEFAULT_AGENT) -> None:
    """Back the agent up to its bucket: its harness's state, files changed since the last backup, memory's index.

    Nothing is deleted in the bucket; keys and settings are never in a backup."""
    found = agent(name)
    remote = backups.backup(found, say)
    say(f"{name} is backed up to {remote}.")


def restore(
    name: Annotated[str, typer.Argument(help="The agent to bring back.")],
    source: FromOpt = None,
) -> None:
    """Bring an agent back from its bucket: its ID, files and harness's state (keys are asked again).

    An agent that is here goes back to its backup: its harness's state is replaced wholly, nothing else."""

    def returning(found: Agent) -> None:
        with paused(found, f"Stopping {found.name} while its harness's state goes back..."):
            backups.go_back(found, say)

    restored = backups.restore(layout(), name, source, say, returning)
    if not restored.returned:
        say(
            f"Its keys are never in a backup: `lnk agent start {name}` asks for its model key, and "
            f"`lnk agent connect {name} <channel>` links its channels again."
        )
