"""The `lnk-whatsapp` executable: what Link asks it answered at once, anything else (`connect`,
`bridge`, `link`, `engine`, `--help`) by its typer app (`commands`).

Link asks `contract`, `describe` and `state` whenever it lists, describes or moves the channel:
those answer without typer, the bridge or the engine loaded (`link_plugin.plugin.run`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from link_plugin.plugin import run
from lnk_whatsapp.plugin import WhatsApp

if TYPE_CHECKING:
    import typer


def main() -> None:
    run(WhatsApp(), app=_app)


def _app() -> typer.Typer:
    from lnk_whatsapp.commands import app

    return app()
