"""The checked-in JSON Schemas are the models' own, and a drift is caught."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from pydantic import Field

from link_plugin import harness, schemas
from link_plugin.contract import Kind

SPEC = Path(__file__).resolve().parents[3] / "contract-spec" / "schemas"


def test_checked_in_schemas_match_the_models() -> None:
    assert schemas.differences(SPEC) == [], "run `hatch run schemas` and commit contract-spec/schemas"


def test_a_model_changed_without_regenerating_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    class Ports(harness.Ports):
        ipv6: bool = Field(default=False)

    changed = tuple(replace(c, answer=Ports) if c.name == "ports" else c for c in harness.COMMANDS)
    monkeypatch.setitem(schemas.TABLES, Kind.HARNESS, changed)
    assert schemas.differences(SPEC) == ["harness/ports.json: differs from the model"]


def test_a_stray_schema_is_caught(tmp_path: Path) -> None:
    schemas.write(tmp_path)
    (tmp_path / "harness" / "gone.json").write_text("{}")
    assert schemas.differences(tmp_path) == ["harness/gone.json: no model has it"]


@pytest.mark.parametrize("kind", ["harness", "memory", "channel"])
def test_the_prose_names_every_command(kind: str) -> None:
    from link_plugin.calls import TABLES

    prose = (SPEC.parent / f"{kind}.md").read_text()
    for command in TABLES[Kind(kind)]:
        assert f"| `{command.name}" in prose, f"contract-spec/{kind}.md has no row for `{command.name}`"
