"""lnk-mini passes the whole conformance kit."""

from link_conformance import HarnessConformance


class TestMini(HarnessConformance):
    plugin = "lnk-mini"
