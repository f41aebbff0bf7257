"""A throwaway Link (settings, agents' folder) for the benchmarks, outside /tmp as a real home is."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import tomli_w

from link_plugin.layout import Layout

AGENT_ID = "benchagent01"


@contextmanager
def throwaway_link(grants: str = "") -> Iterator[Layout]:
    root = Path(tempfile.mkdtemp(prefix="lnk-bench-", dir="/var/tmp"))
    try:
        layout = Layout(config=root / "config", agents=root / "agents")
        settings = layout.agent_config("bench").settings
        settings.parent.mkdir(parents=True)
        settings.write_text(tomli_w.dumps({"id": AGENT_ID, "name": "bench", "owner": "bench@here", "harness": "mini"}))
        layout.agent_config("bench").sandbox.write_text(grants)
        layout.agent("bench").create()
        yield layout
    finally:
        shutil.rmtree(root, ignore_errors=True)
