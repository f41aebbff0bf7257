"""The pytest plugin: `pytest --pyargs link_conformance --lnk-plugin lnk-<name>`."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("link-conformance")
    group.addoption(
        "--lnk-plugin",
        action="store",
        default=None,
        help="the plugin executable to check (e.g. lnk-mini); its kind comes from `contract`",
    )
