"""7. `lnk agent backup`, `delete`, `restore`: an agent backed up to its bucket (a folder, rclone's
local remote), deleted with its files, and brought back from the bucket answers with the same ID,
and its memory finds what it was told before. Its keys never went into the bucket: the model key
is given again.

A machine of its own (its own home, the session's Link install and model), so the session's agent
is untouched; lnk-bucket installs on first use from the release, with the rclone it pins.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lnk_e2e.machine import Machine
from lnk_e2e.model import Model
from lnk_e2e.release import Release

NAME = "keeper"


@pytest.fixture
def home(root: Path, machine: Machine, release: Release, model: Model) -> Iterator[Machine]:
    made = Machine(root / "backups", (machine.root / "bin" / "lnk").resolve(), release, model.origin, None)
    try:
        yield made
    finally:
        made.lnk("agent", "stop", NAME, ok=False)
        made.close()


def _ask(home: Machine, model: Model, text: str, calls: int) -> str:
    model.expect(calls)
    return home.lnk("agent", "chat", NAME, "-m", text, timeout=180).stdout


def _tools_listed(home: Machine, model: Model) -> None:
    """Say something until the model is offered memory's tools: a harness's first turn after a
    start goes to the model without them (they come at the next turn)."""
    deadline = time.monotonic() + 90
    while True:
        seen = len(model.requests)
        _ask(home, model, "Hello, are your tools there?", calls=1)
        if any("search" in request.tool_names for request in model.requests[seen:]):
            return
        assert time.monotonic() < deadline, "the model was offered no memory within 90 s"


def test_an_agent_restored_from_its_bucket_is_itself_and_remembers(
    home: Machine, model: Model, model_key: str, root: Path
) -> None:
    home.lnk("agent", "keys", "set", "openai", NAME, "--stdin", input=model_key)
    home.lnk("agent", "memory", "start", "link", NAME)
    home.lnk("agent", "start", NAME)
    _tools_listed(home, model)
    said = _ask(home, model, "Remember that my boat is called Blue", calls=2)
    assert "My boat is called Blue." in said, said
    agent_id = home.status(NAME)["id"]

    bucket = root / "bucket"
    home.lnk("bucket", "set", NAME, str(bucket))
    home.lnk("agent", "backup", NAME, timeout=900)
    assert (bucket / "files" / "memory" / "notes.md").read_text().count("My boat is called Blue.") == 1
    assert (bucket / "files" / ".lnk-backup" / "link.tar").is_file()
    assert list((bucket / "memory" / "link" / "manifests").glob("*.json"))
    kept = b"".join(p.read_bytes() for p in bucket.rglob("*") if p.is_file())
    assert model_key.encode() not in kept, "a key never goes into a bucket"

    home.lnk("agent", "stop", NAME)
    home.lnk("agent", "delete", NAME, "--yes", "--files")
    assert not (home.agents / NAME).exists() and bucket.is_dir()

    home.lnk("agent", "restore", NAME, "--from", str(bucket), timeout=900)
    assert home.settings(NAME)["id"] == agent_id
    assert not (home.config / "agents" / NAME / "keys.json").exists(), "keys are asked again"
    home.lnk("agent", "keys", "set", "openai", NAME, "--stdin", input=model_key)
    home.lnk("agent", "start", NAME)
    status = home.status(NAME)
    assert status["running"] is True and status["id"] == agent_id
    _tools_listed(home, model)

    said = _ask(home, model, "What is my boat called?", calls=2)
    assert "Your boat is called Blue." in said, said
