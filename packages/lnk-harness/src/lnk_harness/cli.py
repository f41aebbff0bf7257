"""`lnk-harness`: what Link asks it answered at once, anything else by its typer app (`commands`).

Link asks `describe` once per release and `configure`, `start`... at each start: those answer
without typer loaded (`link_plugin.plugin.run`). `serve`, `link`, `--help` go to `commands.app`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from link_plugin.plugin import run
from lnk_harness.adapter import LinkHarness

if TYPE_CHECKING:
    import typer


def main() -> None:
    run(LinkHarness(), app=_app)


def _app() -> typer.Typer:
    from lnk_harness.commands import app

    return app
