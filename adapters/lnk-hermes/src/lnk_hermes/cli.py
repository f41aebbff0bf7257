"""`lnk-hermes`: the harness contract's commands, answered by `lnk_hermes.adapter.Hermes`."""

from __future__ import annotations

from link_plugin.plugin import run
from lnk_hermes.adapter import Hermes


def main() -> None:
    run(Hermes())
