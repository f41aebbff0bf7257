"""The adapter's answers to every harness command, as the core reads them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import MAIN
from helpers import Harness, settings_for, write_settings

from link_conformance.provider import StandInProvider
from link_plugin import harness as contract
from link_plugin.calls import PluginProgram
from link_plugin.contract import Kind
from link_plugin.errors import ExitCode

PROGRAM = PluginProgram("lnk-harness")


def ask(command: str, env: dict[str, str] | None = None) -> object:
    return PROGRAM.ask(Kind.HARNESS, command, env=env or {})


def test_what_it_is() -> None:
    answer = PROGRAM.contract()
    assert (answer.kind, answer.name, answer.version) == (Kind.HARNESS, "harness", 1)
    assert answer.release


def test_what_it_needs_speaks_writes_and_reaches() -> None:
    assert ask("needs") == contract.Needs()
    assert ask("channels") == contract.Channels(channels=[])
    assert ask("ports") == contract.Ports(count=1, default=18800)  # Link adds one: a block of two
    assert ask("folders") == contract.Folders(writes=["chats"])
    assert ask("hosts") == contract.Hosts(hosts=[])
    assert ask("state") == contract.State(paths=[])
    for step in ("install", "configure"):
        assert PROGRAM.run(step).code == ExitCode.NOT_ANSWERED  # nothing to do: Link runs neither
        assert ask(step) == contract.Done()


def test_one_answer_before_a_start() -> None:
    described = ask("describe", {"LNK_PORT": "20000"})
    assert isinstance(described, contract.Description)
    assert set(described.answers) == {*contract.DESCRIBED, "health"}
    for name in contract.DESCRIBED:
        assert described.known(name) == ask(name, {"LNK_PORT": "20000"}), name
    assert described.known("configure") == contract.Done()


def test_its_endpoint_on_lnk_port() -> None:
    flags = {"proof": True, "agent": True, "tools": True, "once": True}
    assert ask("endpoint", {"LNK_PORT": "20000"}) == contract.Endpoint(url="http://127.0.0.1:20000/v1", **flags)
    assert ask("endpoint") == contract.Endpoint(url="http://127.0.0.1:18800/v1", **flags)


def test_start_and_health(tmp_path: Path, provider: StandInProvider) -> None:
    settings = settings_for(tmp_path, MAIN, provider.url)
    with Harness([settings]) as running:
        env = {"LNK_PORT": str(running.port), "LNK_SETTINGS": str(write_settings(settings))}
        start = ask("start", env)
        assert isinstance(start, contract.Start)
        assert start.argv[1:] == ["-m", "lnk_harness.serve"] and os.path.exists(start.argv[0])
        health = ask("health", env)
        assert isinstance(health, contract.Health) and health.ok is True
    health = ask("health", env)
    assert isinstance(health, contract.Health) and health.ok is False
    assert str(running.port) in health.detail


def test_what_start_runs_refuses_an_agent_with_no_model(tmp_path: Path, provider: StandInProvider) -> None:
    settings = settings_for(tmp_path, MAIN, provider.url)
    settings.model = None
    env = {**os.environ, "LNK_SETTINGS": str(write_settings(settings))}
    start = ask("start", env)
    assert isinstance(start, contract.Start)
    done = subprocess.run(start.argv, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "names no model" in done.stderr
    # The hint is a command lnk has: start takes --model and keeps it in the agent's settings.
    assert f"lnk agent start {settings.agent.name} --model <model>" in done.stderr


def test_serve_says_what_is_missing() -> None:
    env = {k: v for k, v in os.environ.items() if k != "LNK_SETTINGS"}
    done = subprocess.run(["lnk-harness", "serve"], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "LNK_SETTINGS" in done.stderr


def test_serve_refuses_a_bad_tools_variable(tmp_path: Path, provider: StandInProvider) -> None:
    settings = settings_for(tmp_path, MAIN, provider.url)
    env = {**os.environ, "LNK_SETTINGS": str(write_settings(settings)), "LNK_TOOLS": "{not json"}
    done = subprocess.run(["lnk-harness", "serve"], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "LNK_TOOLS is not JSON" in done.stderr
