"""The conformance kit's harness checks, run against lnk-hermes and the Hermes Agent it installs."""

from __future__ import annotations

from link_conformance import HarnessConformance


class TestHermes(HarnessConformance):
    plugin = "lnk-hermes"
