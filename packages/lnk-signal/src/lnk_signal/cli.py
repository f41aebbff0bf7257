"""The `lnk-signal` executable: what Link asks it answered at once, anything else (`connect`,
`bridge`, `cli install`, `cli link`, `--help`) by its typer app (`commands`).

Link asks `contract`, `describe` and `state` whenever it lists, describes or moves the channel:
those answer without typer, httpx or signal-cli's client loaded (`link_plugin.plugin.run`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from link_plugin.plugin import run
from lnk_signal.plugin import Signal

if TYPE_CHECKING:
    import typer


def main() -> None:
    run(Signal(), app=_app)


def _app() -> typer.Typer:
    from lnk_signal.commands import app

    return app
