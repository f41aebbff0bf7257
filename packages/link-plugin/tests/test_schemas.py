"""The checked-in JSON Schemas are the models' own, and a drift is caught."""

from __future__ import annotations

import subprocess
import sys
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
def test_the_prose_has_a_row_for_every_command(kind: str) -> None:
    """Each command's row names its arguments, says whether it is required, and which version added it."""
    from link_plugin.commands import TABLES

    prose = (SPEC.parent / f"{kind}.md").read_text()
    rows = {line.split("`")[1].split()[0]: line for line in prose.splitlines() if line.startswith("| `")}
    for command in TABLES[Kind(kind)]:
        row = rows.get(command.name)
        assert row is not None, f"contract-spec/{kind}.md has no row for `{command.name}`"
        assert all(f"<{arg}>" in row for arg in command.args), row
        assert ("| required |" in row) == command.required, row
        assert row.rstrip().endswith(f"| {command.since} |"), row
        for variable in command.inputs:
            if variable.startswith("LNK_"):
                assert variable in prose, f"contract-spec/{kind}.md doesn't say what {variable} is"


def test_the_models_load_no_client() -> None:
    """The contract's models (every module a schema comes from) import without h11, httpx or asyncio."""
    code = (
        "import sys, link_plugin.schemas, link_plugin.approvals, link_plugin.commands\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'h11', 'httpx', 'asyncio', 'subprocess', 'typer'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_names_stay_where_they_were_first() -> None:
    """Moved to models-only modules, each public name is still importable from where it was."""
    from link_plugin import approvals, backoff, calls, commands, control
    from link_plugin.bridge import retry

    assert (calls.TABLES, calls.ACTS, calls.command_of) == (commands.TABLES, commands.ACTS, commands.command_of)
    assert approvals.ApprovalsClient is control.ControlClient
    assert retry.Backoff is backoff.Backoff
