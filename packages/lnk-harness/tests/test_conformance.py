"""Link Harness passes every harness check of the conformance kit."""

from link_conformance import HarnessConformance


class TestLinkHarness(HarnessConformance):
    plugin = "lnk-harness"
