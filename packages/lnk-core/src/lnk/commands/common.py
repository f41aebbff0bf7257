"""What every command shares: the consoles, the layout, JSON output, the agent argument."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.prompt import Confirm

from link_plugin.errors import LinkError
from link_plugin.layout import Layout
from lnk.agents import DEFAULT_AGENT, Agent, load_agent

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

AgentArg = Annotated[str, typer.Argument(help="The agent; main when not named.", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Answer yes to every question (never to no sandbox).")]


def layout() -> Layout:
    return Layout.from_env()


def agent(name: str = DEFAULT_AGENT) -> Agent:
    return load_agent(layout(), name)


def emit(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, default=str))


def say(text: str) -> None:
    err.print(text)


def terminal() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def confirm(question: str, yes: bool, refuse: str) -> None:
    """Go on when told --yes or when the person says yes; without a terminal, refuse naming --yes."""
    if yes:
        return
    if not terminal():
        raise LinkError(f"{refuse} asks first, and there is no terminal to ask in.", "Run it again with --yes.")
    if not Confirm.ask(question, console=err, default=False):
        raise typer.Exit(1)
