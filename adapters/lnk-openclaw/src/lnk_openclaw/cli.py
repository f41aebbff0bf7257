"""`lnk-openclaw`: the harness contract's commands, answered by `lnk_openclaw.adapter.OpenClaw`."""

from __future__ import annotations

from link_plugin.plugin import run
from lnk_openclaw.adapter import OpenClaw


def main() -> None:
    run(OpenClaw())
