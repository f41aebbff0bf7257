"""`lnk-qmd`'s typer app, which `cli.main` makes for what it doesn't answer at once: the memory
engine contract, the session Link runs, and QMD itself as installed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Annotated

import typer

from link_plugin.plugin import build, say
from lnk_qmd import runtime
from lnk_qmd.plugin import Qmd

app = build(Qmd())


@app.command("session", hidden=True, help="One agent's session: QMD's MCP server over its folder.")
def session(
    folder: Annotated[Path, typer.Option("--folder")],
    state: Annotated[Path, typer.Option("--state")],
) -> None:
    from lnk_qmd.session import run

    raise typer.Exit(run(folder.absolute(), state.absolute()))


@app.command(
    "qmd",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    help="Run the installed QMD with its index in STATE: `lnk-qmd qmd --state DIR search narwhal`.",
)
def qmd(
    ctx: typer.Context,
    state: Annotated[Path, typer.Option("--state", help="The folder QMD keeps its index and config in.")],
    show: Annotated[
        bool, typer.Option("--show", help="Print the command and environment as JSON instead of running it.")
    ] = False,
) -> None:
    from lnk_qmd.session import environment

    if not runtime.installed():
        say("QMD isn't installed: run `lnk-qmd install` first.")
        raise typer.Exit(1)
    state = state.absolute()
    state.mkdir(parents=True, exist_ok=True)
    if show:
        print(json.dumps({"argv": runtime.qmd(*ctx.args), "env": environment(state)}))
        return
    raise typer.Exit(subprocess.call(runtime.qmd(*ctx.args), env=environment(state)))
