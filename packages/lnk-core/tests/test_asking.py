"""What a start asks the harness's adapter: `describe` once per release, then only what needs the agent.

lnk-counted and lnk-plain are lnk-mini noting each command it is asked in its home; lnk-older is
lnk-mini from before `describe`, to which it is an unknown command.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import BIN
from world import World

from link_plugin.sandbox import SandboxRequest

QUESTIONS = {"ports", "needs", "channels", "folders", "endpoint", "hosts", "start"}


def _asked(world: World, agent: str, harness: str) -> list[str]:
    path = world.agent(agent).folder.harness_home(harness) / "asked"
    asked = path.read_text().split() if path.exists() else []
    path.unlink(missing_ok=True)
    return asked


def _steps(asked: list[str]) -> list[str]:
    return [command for command in asked if command != "describe"]


def test_a_start_asks_describe_once_per_release_and_no_question_it_answered(world: World) -> None:
    world.start("work", harness="counted")
    first = _asked(world, "work", "counted")
    # `describe` (again if the block moved from where it was asked: the endpoint's port is in it), and
    # the steps it names: each question was answered there, or isn't answered at all (channels)
    assert "describe" in first and _steps(first) == ["install", "configure"]
    assert world.chat("work", "hi").strip() == "ok"

    world.lnk("agent", "restart", "work", "--no-sandbox")
    assert _asked(world, "work", "counted") == ["configure"]  # describe kept; installed once

    program = BIN / "lnk-counted"  # a new release rewrites the program: it is asked again
    os.utime(program, ns=(time.time_ns(), time.time_ns() + 10**9))
    world.lnk("agent", "restart", "work", "--no-sandbox")
    again = _asked(world, "work", "counted")
    assert "describe" in again and _steps(again) == ["install", "configure"]
    assert world.chat("work", "still there?").strip() == "ok"


def test_an_adapter_from_before_describe_is_asked_each_question(world: World) -> None:
    world.start("work", harness="older")
    asked = set(_asked(world, "work", "older"))
    assert QUESTIONS - {"hosts"} | {"install", "configure"} <= asked
    assert world.chat("work", "hi").strip() == "ok"
    spec = world.spec("work")
    assert spec.endpoint is not None and spec.endpoint.proof  # its `endpoint`, asked on its own


def test_a_harness_with_nothing_to_install_or_configure_runs_neither(world: World) -> None:
    calls = world.with_sandbox()
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    world.lnk("agent", "start", "work", "--harness", "plain", ok=False)  # the sandbox double runs nothing
    asked = _asked(world, "work", "plain")
    assert "install" not in asked and "configure" not in asked and "hosts" not in asked
    runs = [SandboxRequest.model_validate(call["request"]) for call in world.calls(calls) if call["args"][0] == "run"]
    assert [r.mode for r in runs] == ["harness"]  # no setup step in a sandbox: only the harness


def test_kept_answers_live_in_links_settings_folder(world: World) -> None:
    world.start("work", harness="counted")
    kept = list((world.layout.config / "cache" / "answers").glob("*.json"))
    assert kept and all(Path(p).stat().st_mode & 0o777 == 0o600 for p in kept)
