"""Answers written for earlier and later contract versions, checked against today's models.

Each file is {"contract": <version it was written for>, "answer": {...}} under
fixtures/<kind>/<command>/. Minimal answers stand for the oldest plugins (only the required
fields); answers with fields this version doesn't know stand for newer ones.
"""

from __future__ import annotations

import json
from pathlib import Path

from link_plugin.answers import Answer, parse_answer
from link_plugin.commands import command_of
from link_plugin.contract import Kind

FOLDER = Path(__file__).parent / "fixtures"


def fixture_files() -> list[Path]:
    return sorted(FOLDER.rglob("*.json"))


def check(path: Path) -> Answer:
    """Parse one fixture with today's model for its command."""
    relative = path.relative_to(FOLDER)
    kind, command = Kind(relative.parts[0]), relative.parts[1]
    data = json.loads(path.read_text())
    model = command_of(kind, command).answer
    assert model is not None
    return parse_answer(model, data["answer"], source=f"fixture {relative}")
