"""The `lnk-discord` executable."""

from __future__ import annotations

from link_plugin.plugin import run
from lnk_discord.plugin import Discord


def main() -> None:
    run(Discord())
