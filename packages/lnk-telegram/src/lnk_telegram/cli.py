"""The `lnk-telegram` executable."""

from __future__ import annotations

from link_plugin.plugin import run
from lnk_telegram.plugin import Telegram


def main() -> None:
    run(Telegram())
