"""The conformance kit's harness checks, run against lnk-openclaw and the OpenClaw it installs."""

from __future__ import annotations

from link_conformance import HarnessConformance


class TestOpenClaw(HarnessConformance):
    plugin = "lnk-openclaw"
