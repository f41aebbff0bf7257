"""`lnk-harness`'s typer app: the adapter's commands, and `serve`, which runs the endpoint (`lnk_harness.serve`).

`cli.main` answers a contract's command without arguments itself and hands every other command
line here."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from link_plugin.plugin import build
from lnk_harness.adapter import LinkHarness

app = build(LinkHarness())


@app.command("serve", help="Run the endpoint for the agent $LNK_SETTINGS names (and any --settings) on $LNK_PORT.")
def serve(
    settings: Annotated[
        list[Path] | None,
        typer.Option("--settings", help="A settings file of another agent to answer for (repeat for more)."),
    ] = None,
    port: Annotated[int | None, typer.Option("--port", help="The port to listen on (default: $LNK_PORT).")] = None,
) -> None:
    from lnk_harness.serve import own_settings
    from lnk_harness.serve import serve as run

    own = own_settings()
    paths = ([own] if own is not None else []) + [
        p for p in settings or [] if own is None or p.resolve() != own.resolve()
    ]
    raise typer.Exit(run(paths, own, port))
