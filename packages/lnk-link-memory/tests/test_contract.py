"""The package's executable answers `contract`."""

from __future__ import annotations

from link_plugin.calls import PluginProgram
from link_plugin.contract import Kind
from link_plugin.harness import Done


def test_contract_names_the_plugin() -> None:
    assert PluginProgram("lnk-link-memory").contract().name == "link-memory"


def test_install_leaves_the_default_model_ready() -> None:
    answer = PluginProgram("lnk-link-memory").ask(Kind.MEMORY, "install")
    assert isinstance(answer, Done) and answer.ok and "all-MiniLM-L6-v2" in answer.detail
