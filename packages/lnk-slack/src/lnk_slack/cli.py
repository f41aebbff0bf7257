"""The `lnk-slack` executable."""

from __future__ import annotations

from link_plugin.plugin import run
from lnk_slack.plugin import Slack


def main() -> None:
    run(Slack())
