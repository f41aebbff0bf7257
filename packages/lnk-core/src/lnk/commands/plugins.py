"""`lnk plugins`: the plugins on PATH and in lnk's own environment, each with its contract or its error."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from link_plugin.contract import CONTRACT_VERSION
from lnk.plugins import found_plugins


def plugins_command(
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the plugins on PATH. A broken one is listed with its error."""
    found = sorted(found_plugins(), key=lambda f: f.executable)
    if as_json:
        typer.echo(json.dumps([f.model_dump(mode="json") for f in found], indent=2))
        return
    console = Console()
    if not found:
        console.print("No lnk-* plugins on PATH.")
        return
    table = Table("plugin", "kind", "contract", "release", "path")
    for f in found:
        if f.error:
            table.add_row(f.executable, "[red]broken[/red]", "", "", f"{f.path}\n[red]{f.error}[/red]")
            continue
        newer = f" (newer than lnk's {CONTRACT_VERSION})" if (f.version or 0) > CONTRACT_VERSION else ""
        table.add_row(f.executable, f.kind.value if f.kind else "", f"{f.version}{newer}", f.release or "", f.path)
    console.print(table)
