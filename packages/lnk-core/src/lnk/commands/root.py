"""The `lnk` command's root: its groups and commands, each imported when it runs (`lazy`), and
`--version`, which `lnk.cli` also answers before any of this loads."""

from __future__ import annotations

import typer

from lnk.cli import version_line
from lnk.commands.lazy import Lazy, lazy_group

app = typer.Typer(
    name="lnk",
    help="Personal AI agents on your own machine, answering you where you already chat.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=lazy_group(
        {
            "plugins": Lazy("lnk.commands.plugins:plugins_command"),
            "upgrade": Lazy("lnk.upgrade:upgrade_command"),
            "uninstall": Lazy("lnk.uninstall:uninstall_command"),
            "agent": Lazy("lnk.commands.agent:app"),
            "sandbox": Lazy("lnk.commands.sandbox:app"),
            "model": Lazy("lnk.commands.model:app"),
            "bucket": Lazy("lnk.commands.bucket:app"),
        }
    ),
)


def _version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print lnk's version and exit."
    ),
) -> None:
    """lnk: personal AI agents on your own machine."""
