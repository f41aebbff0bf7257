"""`lnk-whatsapp`'s typer app: the channel's commands, and `engine`, the process that speaks
WhatsApp for them. `cli.main` makes it only for what it doesn't answer at once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from link_plugin.plugin import build
from lnk_whatsapp.plugin import WhatsApp


def app() -> typer.Typer:
    made = build(WhatsApp())

    @made.command(
        "engine", help="Speak WhatsApp for the bridge: JSON lines on stdin and stdout (lnk_whatsapp.protocol)."
    )
    def engine(
        folder: Annotated[Path, typer.Argument(help="The channel's folder, where the linked device is kept.")],
    ) -> None:
        from lnk_whatsapp.engine import serve

        raise typer.Exit(serve(folder))

    return made
