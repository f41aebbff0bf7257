"""`lnk-harness`: the adapter's commands, and `serve`, which runs the endpoint (what `start` answers)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated

import typer

from link_plugin import LinkError
from link_plugin.harness import ENV_PORT, ENV_SETTINGS
from link_plugin.plugin import build, say
from lnk_harness.adapter import LinkHarness
from lnk_harness.addresses import DEFAULT_PORT, HOST

app = build(LinkHarness())


@app.command("serve", help="Run the endpoint for the agent $LNK_SETTINGS names (and any --settings) on $LNK_PORT.")
def serve(
    settings: Annotated[
        list[Path] | None,
        typer.Option("--settings", help="A settings file of another agent to answer for (repeat for more)."),
    ] = None,
    port: Annotated[int | None, typer.Option("--port", help="The port to listen on (default: $LNK_PORT).")] = None,
) -> None:
    import uvicorn

    from lnk_harness import agents, model, server

    logging.basicConfig(level=logging.INFO, format="lnk-harness: %(message)s")
    own = Path(os.environ[ENV_SETTINGS]) if os.environ.get(ENV_SETTINGS) else None
    paths = ([own] if own is not None else []) + [
        p for p in settings or [] if own is None or p.resolve() != own.resolve()
    ]
    if not paths:
        say(f"lnk-harness serve: no agent to answer for: set {ENV_SETTINGS} or pass --settings FILE.")
        raise typer.Exit(2)
    http = model.new_http()
    try:
        loaded = agents.load(paths, own, os.environ, http)
    except LinkError as exc:
        say(f"lnk-harness serve: {exc}")
        raise typer.Exit(1) from None
    listen = port or int(os.environ.get(ENV_PORT) or 0) or (loaded[0].settings.ports or [DEFAULT_PORT])[0]
    config = uvicorn.Config(
        server.Harness(loaded, http).app(),
        host=HOST,
        port=listen,
        log_level="warning",
        timeout_graceful_shutdown=5,
    )
    uvicorn.Server(config).run()


def main() -> None:
    app()
