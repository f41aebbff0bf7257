"""`lnk-openclaw`: the harness contract's commands, answered by `lnk_openclaw.adapter.OpenClaw`."""

from __future__ import annotations

from link_plugin.plugin import build
from lnk_openclaw.adapter import OpenClaw

app = build(OpenClaw())


def main() -> None:
    app()
