"""Additivity: unknown fields are tolerated, a missing required one is named."""

from __future__ import annotations

import pytest

from link_plugin import harness, memory
from link_plugin.answers import parse_answer
from link_plugin.errors import ContractError


def test_unknown_fields_from_a_newer_plugin_are_kept() -> None:
    answer = parse_answer(harness.Ports, '{"count": 2, "default": 18800, "ipv6": true}', source="lnk-x ports")
    assert answer.count == 2
    assert answer.model_extra == {"ipv6": True}


def test_missing_required_field_is_named() -> None:
    with pytest.raises(ContractError, match=r"lnk-x command broke the contract: missing required field 'argv'"):
        parse_answer(memory.MemoryCommand, "{}", source="lnk-x command")


def test_not_json_says_so() -> None:
    with pytest.raises(ContractError, match="not JSON"):
        parse_answer(harness.Ports, "ports: 2", source="lnk-x ports")


def test_unknown_permission_in_needs_is_refused() -> None:
    with pytest.raises(ContractError, match="unknown permission 'netwrok'"):
        parse_answer(harness.Needs, '{"permissions": [{"name": "netwrok", "why": "x"}]}', source="lnk-x needs")


def test_a_risk_cannot_take_a_permissions_name() -> None:
    with pytest.raises(ContractError, match="can't take the name"):
        parse_answer(harness.Needs, '{"risks": [{"name": "lan", "why": "x"}]}', source="lnk-x needs")


def test_endpoint_must_be_on_the_loopback() -> None:
    with pytest.raises(ContractError, match="loopback"):
        parse_answer(harness.Endpoint, '{"url": "http://10.0.0.2:80/v1"}', source="lnk-x endpoint")


def test_every_stated_default_is_an_answer_of_its_command() -> None:
    from link_plugin.commands import TABLES

    for commands in TABLES.values():
        for command in commands:
            if command.default is None or command.name == "endpoint":
                continue
            assert command.answer is not None
            default = command.default()
            assert command.answer.model_validate(default.model_dump()) == default, command.name


def test_no_endpoint_is_the_endpoint_default() -> None:
    from link_plugin.commands import command_of
    from link_plugin.contract import Kind

    assert isinstance(command_of(Kind.HARNESS, "endpoint").default(), harness.NoEndpoint)  # type: ignore[misc]
