"""The plugins: `lnk plugins` lists those on PATH; `require` is how lnk gets one it needs."""

from __future__ import annotations

import json
import shutil

import typer
from rich.console import Console
from rich.table import Table

from link_plugin.contract import CONTRACT_VERSION
from link_plugin.discovery import discover
from link_plugin.errors import LinkError


def plugins_command(
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the plugins on PATH. A broken one is listed with its error."""
    found = sorted(discover(), key=lambda f: f.executable)
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


def require(executable: str) -> str:
    """The path of a plugin that must be on PATH: every "this plugin is needed" goes through here."""
    path = shutil.which(executable)
    if path is not None:
        return path
    raise LinkError(
        f"{executable} is not installed.",
        f"Install its wheel into lnk's environment (pip install {executable}), then try again.",
    )
