"""The conformance kit's memory-engine checks, run against lnk-qmd and the QMD it installs."""

from __future__ import annotations

from link_conformance import MemoryConformance


class TestQmd(MemoryConformance):
    plugin = "lnk-qmd"
