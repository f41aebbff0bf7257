"""The older-answer fixtures parse, and a fixture missing a required field would be caught."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from link_conformance.fixtures import FOLDER, check, fixture_files
from link_plugin.errors import ContractError


def test_every_command_with_an_answer_has_fixtures() -> None:
    from link_plugin.commands import TABLES

    covered = {(p.relative_to(FOLDER).parts[0], p.relative_to(FOLDER).parts[1]) for p in fixture_files()}
    for kind, commands in TABLES.items():
        for command in commands:
            if command.answer is not None:
                assert (kind.value, command.name) in covered, f"no fixture for {kind.value} {command.name}"


def test_all_fixtures_parse() -> None:
    for path in fixture_files():
        check(path)


def test_a_fixture_missing_a_required_field_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "harness" / "start" / "v1-broken.json"
    broken.parent.mkdir(parents=True)
    broken.write_text(json.dumps({"contract": 1, "answer": {"env": {}}}))
    monkeypatch.setattr("link_conformance.fixtures.FOLDER", tmp_path)
    with pytest.raises(ContractError, match="missing required field 'argv'"):
        check(broken)
