"""What `pytest --pyargs link_conformance --lnk-plugin lnk-<name>` runs: the suite of the
plugin's kind (the others skip), and the older-answer fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from link_conformance.fixtures import FOLDER, check, fixture_files
from link_conformance.rules import broken
from link_conformance.suites import ChannelConformance, HarnessConformance, MemoryConformance


class TestHarness(HarnessConformance):
    pass


class TestMemory(MemoryConformance):
    pass


class TestChannel(ChannelConformance):
    pass


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: str(p.relative_to(FOLDER)))
def test_fixture_parses(path: Path) -> None:
    try:
        check(path)
    except Exception as exc:
        raise AssertionError(broken("fixtures", str(exc))) from exc
