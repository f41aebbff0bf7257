"""JSON Schemas of every answer and input, generated from the models.

contract-spec/schemas/ holds them checked in; `python -m link_plugin.schemas DIR` writes them,
and `differences(DIR)` says where the checked-in files and the models part ways.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from link_plugin import approvals, bucket, channel, sandbox, scheduler, settings, wire
from link_plugin.commands import TABLES
from link_plugin.harness import HarnessSettings


def _inputs() -> dict[str, type[BaseModel]]:
    return {
        "inputs/harness-settings.json": HarnessSettings,
        "inputs/bridge-spec.json": channel.BridgeSpec,
        "inputs/approval-question.json": approvals.Question,
        "inputs/agent-settings.json": settings.AgentSettings,
        "inputs/machine-settings.json": settings.MachineSettings,
        "inputs/runner-spec.json": scheduler.RunnerSpec,
        "scheduler/notice.json": scheduler.Notice,
        "scheduler/schedules.json": scheduler.Schedules,
        "sandbox/request.json": sandbox.SandboxRequest,
        "sandbox/decision.json": sandbox.Decision,
        "sandbox/grants.json": sandbox.Grants,
        "sandbox/check.json": sandbox.Check,
        "sandbox/permissions.json": sandbox.Permissions,
        "bucket/checked.json": bucket.Checked,
        "bucket/copied.json": bucket.Copied,
        "bucket/deleted.json": bucket.Deleted,
        "bucket/index-version.json": bucket.IndexVersion,
        "wire/proof-request.json": wire.ProofRequest,
        "wire/proof-answer.json": wire.ProofAnswer,
        "wire/recover-answer.json": wire.RecoverAnswer,
        "wire/recover-confirm.json": wire.RecoverConfirm,
    }


def generate() -> dict[str, str]:
    """Relative path -> the schema's text, for every answer of every contract and every input."""
    models: dict[str, type[BaseModel]] = dict(_inputs())
    for kind, commands in TABLES.items():
        for command in commands:
            if command.answer is not None:
                models[f"{kind.value}/{command.name}.json"] = command.answer
    return {
        path: json.dumps(model.model_json_schema(), indent=2, sort_keys=True) + "\n"
        for path, model in sorted(models.items())
    }


def write(folder: Path) -> list[str]:
    written = []
    for path, text in generate().items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
            written.append(path)
    wanted = set(generate())
    for stale in folder.rglob("*.json"):
        if str(stale.relative_to(folder)) not in wanted:
            stale.unlink()
            written.append(f"{stale.relative_to(folder)} (removed)")
    return written


def differences(folder: Path) -> list[str]:
    """What differs between the schemas checked in under `folder` and the models."""
    found = []
    expected = generate()
    for path, text in expected.items():
        target = folder / path
        if not target.exists():
            found.append(f"{path}: missing")
        elif target.read_text() != text:
            found.append(f"{path}: differs from the model")
    for present in folder.rglob("*.json"):
        if str(present.relative_to(folder)) not in expected:
            found.append(f"{present.relative_to(folder)}: no model has it")
    return found


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("contract-spec/schemas")
    for line in write(folder) or ["schemas are up to date"]:
        print(line)


if __name__ == "__main__":
    main()
