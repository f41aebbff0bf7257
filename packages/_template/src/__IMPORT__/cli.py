"""`__SCRIPT__`, the executable Link runs: each contract command a subcommand printing one JSON answer."""

from __future__ import annotations

from link_plugin.plugin import run

from .plugin import __CLASS__


def main() -> None:
    run(__CLASS__())
