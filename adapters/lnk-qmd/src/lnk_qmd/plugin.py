"""lnk-qmd as a memory engine plugin: `lnk-qmd contract | install | command <folder> <state>`.

QMD's installer (`runtime`, with Link's pinned Node) is loaded by `install` alone."""

from __future__ import annotations

import sys
from pathlib import Path

from link_plugin import memory as contract
from link_plugin.harness import Done
from link_plugin.plugin import MemoryContext, MemoryEngine
from lnk_qmd import __version__

READ_ONLY = ("query", "get", "multi_get", "status")
"""QMD's MCP tools: each only reads its index, so none asks the owner first."""


class Qmd(MemoryEngine):
    name = "qmd"
    release = __version__

    def install(self, ctx: MemoryContext) -> Done:
        from lnk_qmd import runtime

        return Done(ok=True, detail=runtime.install())

    def command(self, ctx: MemoryContext, folder: Path, state: Path) -> contract.MemoryCommand:
        # QMD writes no notes: LNK_NOTES, when Link names one, is left alone (no remember).
        argv = [sys.executable, "-m", "lnk_qmd", "session", "--folder", str(folder), "--state", str(state)]
        return contract.MemoryCommand(argv=argv, env={}, notes=None, no_ask=list(READ_ONLY), writes=[])
