"""Asking a plugin: answers, defaults for what it doesn't answer, and failures that are errors."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from link_plugin import harness
from link_plugin.calls import PluginProgram
from link_plugin.contract import Kind
from link_plugin.errors import ContractError, ExitCode, PluginFailed

ADAPTER = """
from link_plugin.errors import LinkError
from link_plugin.harness import Done, Endpoint, Needs, Ports, Start, State
from link_plugin.plugin import HarnessAdapter, run

class Partial(HarnessAdapter):
    name = "partial"

    def ports(self, ctx):
        return Ports(count=3, default=int(ctx.env.get("LNK_PORT", "18000")))

    def needs(self, ctx):
        raise RuntimeError("needs is broken in this release")

    def install(self, ctx):
        raise LinkError("the installer could not reach its host", "Check the hosts list.")

    def start(self, ctx):
        return Start(argv=["partial-server"], env={"PORT": str(ctx.port)})

    def state(self, ctx):
        return State(paths=[ctx.settings.agent.name] if ctx.settings else ["."])

run(Partial())
"""


@pytest.fixture
def partial(make_plugin: Callable[[str, str], Path]) -> PluginProgram:
    return PluginProgram(str(make_plugin("lnk-partial", ADAPTER)))


def test_contract(partial: PluginProgram) -> None:
    answer = partial.contract()
    assert (answer.kind, answer.name, answer.version) == (Kind.HARNESS, "partial", 1)


def test_answers_read_their_context(partial: PluginProgram) -> None:
    ports = partial.ask(Kind.HARNESS, "ports", env={"LNK_PORT": "20000"})
    assert ports == harness.Ports(count=3, default=20000)
    start = partial.ask_as(harness.Start, Kind.HARNESS, "start", env={"LNK_PORT": "20000"})
    assert start.env == {"PORT": "20000"}


def test_unanswered_commands_take_the_stated_default(partial: PluginProgram) -> None:
    assert isinstance(partial.ask(Kind.HARNESS, "endpoint"), harness.NoEndpoint)
    assert partial.ask(Kind.HARNESS, "channels") == harness.Channels(channels=["telegram"])
    assert partial.ask(Kind.HARNESS, "folders") == harness.Folders(writes=["Home"])
    assert partial.ask(Kind.HARNESS, "configure") == harness.Done()


def test_unanswered_exits_3(partial: PluginProgram) -> None:
    assert partial.run("hosts").code == ExitCode.NOT_ANSWERED


def test_a_failing_question_takes_its_default(partial: PluginProgram) -> None:
    assert partial.run("needs").code == ExitCode.FAILED
    assert partial.ask(Kind.HARNESS, "needs") == harness.Needs()


def test_a_failing_step_is_an_error_with_the_plugins_words(partial: PluginProgram) -> None:
    asked = partial.run("install")
    assert asked.code == ExitCode.FAILED
    assert json.loads(asked.stdout) == {
        "error": "the installer could not reach its host",
        "hint": "Check the hosts list.",
    }
    with pytest.raises(PluginFailed, match="could not reach its host"):
        partial.ask(Kind.HARNESS, "install")


def test_a_command_an_older_plugin_does_not_know_takes_the_default(
    make_plugin: Callable[[str, str], Path],
) -> None:
    older = make_plugin(
        "lnk-older",
        "import sys\nif sys.argv[1] == 'contract':\n"
        '    print(\'{"kind": "harness", "version": 1, "name": "older"}\')\n'
        "else:\n    sys.exit(2)\n",
    )
    program = PluginProgram(str(older))
    assert program.ask(Kind.HARNESS, "ports") == harness.Ports(count=200)


def test_a_required_command_unanswered_is_an_error(make_plugin: Callable[[str, str], Path]) -> None:
    bare = make_plugin(
        "lnk-bare",
        "from link_plugin.plugin import HarnessAdapter, run\n"
        "class Bare(HarnessAdapter):\n    name = 'bare'\nrun(Bare())\n",
    )
    with pytest.raises(PluginFailed, match="start failed"):
        PluginProgram(str(bare)).ask(Kind.HARNESS, "start")


def test_a_broken_answer_names_the_field(make_plugin: Callable[[str, str], Path]) -> None:
    liar = make_plugin("lnk-liar", "import sys\nprint('{\"argv\": []}' if sys.argv[1] == 'start' else '{}')\n")
    with pytest.raises(ContractError, match="field 'argv'"):
        PluginProgram(str(liar)).ask(Kind.HARNESS, "start")


def test_not_on_path_says_so() -> None:
    with pytest.raises(PluginFailed, match="lnk-nowhere is not on PATH"):
        PluginProgram("lnk-nowhere").contract()


def test_help_lists_the_contract_commands(partial: PluginProgram) -> None:
    assert partial.path is not None
    shown = subprocess.run([partial.path, "--help"], capture_output=True, text=True).stdout
    for name in ("contract", "needs", "endpoint", "start", "health", "link"):
        assert name in shown


def test_describe_answers_at_once_what_needs_no_agent(partial: PluginProgram) -> None:
    described = partial.ask_as(harness.Description, Kind.HARNESS, "describe", env={"LNK_PORT": "20000"})
    assert set(described.answers) == {"ports", "needs", "state", "install", "start"}
    assert described.known("ports") == harness.Ports(count=3, default=20000)
    assert described.known("needs") is None  # it failed here: asked on its own, and takes its default there
    assert described.known("state") is None  # it reads the agent's settings, which describe isn't given
    assert isinstance(described.known("endpoint"), harness.NoEndpoint)  # not answered: its default, unasked
    assert described.known("configure") == harness.Done()
    assert described.known("start") == harness.Start(argv=["partial-server"], env={"PORT": "20000"})


def test_an_adapter_without_describe_is_asked_each_command() -> None:
    each = harness.ask_each()
    assert all(each.known(c.name) is None for c in harness.COMMANDS if c.name not in ("contract", "describe"))
