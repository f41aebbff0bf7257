"""The package's executable answers `contract`."""

from __future__ import annotations

from link_plugin.calls import PluginProgram


def test_contract_names_the_plugin() -> None:
    assert PluginProgram("lnk-link-memory").contract().name == "link-memory"
