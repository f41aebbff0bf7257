"""The `lnk` command."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from link_plugin.errors import LinkError
from lnk import __version__
from lnk.commands import agent, channels, keys, memory, model, sandbox
from lnk.plugins import plugins_command
from lnk.upgrade import upgrade_command

app = typer.Typer(
    name="lnk",
    help="Personal AI agents on your own machine, answering you where you already chat.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"lnk {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print lnk's version and exit."
    ),
) -> None:
    """lnk: personal AI agents on your own machine."""


app.command("plugins")(plugins_command)
app.command("upgrade")(upgrade_command)
agent.app.add_typer(keys.app, name="keys")
agent.app.add_typer(memory.app, name="memory")
agent.app.command()(channels.connect)
agent.app.command()(channels.disconnect)
agent.app.command()(sandbox.allow)
agent.app.command()(sandbox.deny)
agent.app.command()(sandbox.permissions)
agent.app.add_typer(sandbox.harness_app, name="harness", hidden=True)
app.add_typer(agent.app, name="agent")
app.add_typer(sandbox.app, name="sandbox")
app.add_typer(model.app, name="model")

AGENT_COMMANDS = frozenset(
    {
        "start",
        "stop",
        "restart",
        "status",
        "list",
        "delete",
        "logs",
        "chat",
        "use",
        "approvals",
        "approve",
        "supervise",
        "keys",
        "memory",
        "connect",
        "disconnect",
        "allow",
        "deny",
        "permissions",
        "harness",
    }
)


def _harness_verb(argv: list[str]) -> list[str]:
    """`lnk agent <harness> <verb> ...` reads as `lnk agent harness <verb> <harness> ...`."""
    if (
        len(argv) >= 3
        and argv[0] == "agent"
        and argv[1] not in AGENT_COMMANDS
        and not argv[1].startswith("-")
        and argv[2] in sandbox.HARNESS_VERBS
    ):
        return ["agent", "harness", argv[2], argv[1], *argv[3:]]
    return argv


def main() -> None:
    try:
        app(args=_harness_verb(sys.argv[1:]), prog_name="lnk")
    except LinkError as exc:
        console = Console(stderr=True, highlight=False)
        console.print(f"[red]{exc.message}[/red]", markup=True)
        if exc.hint:
            console.print(exc.hint, markup=False)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
