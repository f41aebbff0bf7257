"""The package's executable answers `contract` as the core asks it."""

from __future__ import annotations

from helpers import PROGRAM

from link_plugin.calls import PluginProgram
from link_plugin.contract import Kind


def test_contract_names_the_sandbox() -> None:
    answer = PluginProgram(PROGRAM).contract()
    assert answer.name == "sandbox" and answer.kind == Kind.SANDBOX
