"""The conformance kit's memory-engine checks, run against lnk-link-memory."""

from __future__ import annotations

from link_conformance import MemoryConformance


class TestLinkMemory(MemoryConformance):
    plugin = "lnk-link-memory"
