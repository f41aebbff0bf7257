"""`lnk-link-memory`: what Link asks it answered at once, anything else by its typer app (`commands`).

Link asks `contract` and `install` before each start with memory: those answer without typer
loaded (`link_plugin.plugin.run`). `command`, `serve`, `session`, `engine`, `status` and
`--help` go to `commands.app`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from link_plugin.plugin import run
from lnk_link_memory.plugin import LinkMemory

if TYPE_CHECKING:
    import typer


def main() -> None:
    run(LinkMemory(), app=_app)


def _app() -> typer.Typer:
    from lnk_link_memory.commands import app

    return app
