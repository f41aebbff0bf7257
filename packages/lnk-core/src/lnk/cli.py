"""The `lnk` command."""

from __future__ import annotations

import typer

from lnk import __version__
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


def main() -> None:
    app()
