"""The `lnk-qmd` executable: what Link asks it answered at once (`contract`, `install`), anything
else (`command`, `session`, `qmd`, `--help`) by its typer app (`commands`), made only then."""

from __future__ import annotations

from typing import TYPE_CHECKING

from link_plugin.plugin import run
from lnk_qmd.plugin import Qmd

if TYPE_CHECKING:
    import typer


def main() -> None:
    run(Qmd(), app=_app)


def _app() -> typer.Typer:
    from lnk_qmd.commands import app

    return app
