"""`run` answers a command without arguments itself, as the typer app of `build` would, and hands
every other command line to that app: the same JSON, the same exit code, the same words."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import typer

from link_plugin import plugin as plugin_module
from link_plugin.channel import ChannelState, Describe
from link_plugin.errors import ExitCode, LinkError, NotAnswered
from link_plugin.harness import Description, Done, Endpoint, Health, Needs, Ports, Start
from link_plugin.plugin import (
    ChannelContext,
    ChannelPlugin,
    HarnessAdapter,
    HarnessContext,
    MemoryContext,
    MemoryEngine,
    Plugin,
    build,
    plain,
    run,
)


class Adapter(HarnessAdapter):
    """One answer of each kind: answered, not answered, a LinkError, a crash, a slow step."""

    name = "each"
    release = "1.2.3"

    def ports(self, ctx: HarnessContext) -> Ports:
        return Ports(count=2, default=ctx.port or 18000)

    def endpoint(self, ctx: HarnessContext) -> Endpoint:
        return Endpoint(url=f"http://127.0.0.1:{ctx.port or 18000}/v1", proof=True)

    def needs(self, ctx: HarnessContext) -> Needs:
        raise RuntimeError("needs is broken in this release")

    def install(self, ctx: HarnessContext) -> Done:
        raise LinkError("the installer could not reach its host", "Check the hosts list.")

    async def configure(self, ctx: HarnessContext) -> Done:  # type: ignore[override]  # a coroutine is awaited
        return Done(detail="configured")

    def start(self, ctx: HarnessContext) -> Start:
        return Start(argv=["each-server"], env={"PORT": str(ctx.port)})

    def health(self, ctx: HarnessContext) -> Health:
        raise KeyboardInterrupt

    def link(self, ctx: HarnessContext, channel: str) -> Done:
        return Done(detail=f"linked {channel}")


class Engine(MemoryEngine):
    name = "engine"

    def install(self, ctx: MemoryContext) -> Done:
        return Done(detail=f"installed for {ctx.agent_id}")


class Channel(ChannelPlugin):
    name = "chat"

    def describe(self, ctx: ChannelContext) -> Describe:
        return Describe(title="Chat")

    def state(self, ctx: ChannelContext) -> ChannelState:
        raise NotAnswered

    def disconnect(self, ctx: ChannelContext) -> Done:
        raise LinkError(f"{ctx.agent} is not connected")


PLUGINS = [Adapter(), Engine(), Channel()]
Said = tuple[int, str, str]


def said(main: Callable[[], None], argv: list[str], capsys: pytest.CaptureFixture[str]) -> Said:
    """How a program ended on this command line: (exit code, stdout, stderr)."""
    capsys.readouterr()
    saved = sys.argv
    sys.argv = ["lnk-test", *argv]
    try:
        main()
        code = 0
    except SystemExit as ended:
        code = ended.code if isinstance(ended.code, int) else 1
    finally:
        sys.argv = saved
    out, err = capsys.readouterr()
    return code, out, err


def untyped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if `run` makes a typer app."""

    def no_app(plugin: Plugin) -> typer.Typer:
        raise AssertionError("the typer app was made for a command run answers itself")

    monkeypatch.setattr(plugin_module, "build", no_app)


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda p: p.kind.value)
def test_each_command_without_arguments_answers_as_the_typer_app_does(
    plugin: Plugin, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LNK_PORT", "20400")
    monkeypatch.setenv("LNK_AGENT", "main")
    monkeypatch.setenv("LNK_AGENT_ID", "abcdefabcdef")
    typed = {name: said(build(plugin), [name], capsys) for name in plain(plugin)}
    untyped(monkeypatch)
    for name, through_typer in typed.items():
        assert said(lambda: run(plugin), [name], capsys) == through_typer, name


def test_the_answers_and_exit_codes_are_the_contracts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LNK_PORT", "20400")
    untyped(monkeypatch)
    adapter = Adapter()

    def ran(name: str) -> Said:
        return said(lambda: run(adapter), [name], capsys)

    assert json.loads(ran("contract")[1]) == {"kind": "harness", "version": 1, "name": "each", "release": "1.2.3"}
    assert json.loads(ran("ports")[1]) == {"count": 2, "default": 20400}
    assert ran("configure")[:2] == (ExitCode.ANSWERED, '{"ok":true,"detail":"configured"}\n')
    code, out, err = ran("hosts")
    assert (code, out) == (ExitCode.NOT_ANSWERED, "") and "doesn't answer `hosts`" in err
    code, out, err = ran("install")
    assert code == ExitCode.FAILED and "could not reach its host" in err
    assert json.loads(out) == {"error": "the installer could not reach its host", "hint": "Check the hosts list."}
    code, out, err = ran("needs")
    assert code == ExitCode.FAILED and "Traceback" in err
    assert json.loads(out) == {"error": "RuntimeError: needs is broken in this release", "hint": None}
    assert ran("health")[0] == 130
    described = Description.model_validate_json(ran("describe")[1])
    assert described.known("ports") == Ports(count=2, default=20400)


@pytest.mark.parametrize(
    "argv",
    [["--help"], [], ["nope"], ["link"], ["link", "telegram"], ["ports", "--help"], ["contract", "extra"]],
    ids=" ".join,
)
def test_every_other_command_line_is_the_typer_apps(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    adapter = Adapter()
    assert said(lambda: run(adapter), argv, capsys) == said(build(adapter), argv, capsys)


def test_usage_errors_and_help_say_what_they_said(capsys: pytest.CaptureFixture[str]) -> None:
    adapter = Adapter()
    code, _, err = said(lambda: run(adapter), ["nope"], capsys)
    assert code == ExitCode.USAGE and "No such command 'nope'" in err
    code, _, err = said(lambda: run(adapter), ["link"], capsys)
    assert code == ExitCode.USAGE and "Missing argument" in err
    code, out, _ = said(lambda: run(adapter), ["--help"], capsys)
    assert code == 0 and all(name in out for name in plain(adapter))
    linked = said(lambda: run(adapter), ["link", "telegram"], capsys)
    assert linked == (0, '{"ok":true,"detail":"linked telegram"}\n', "")


def with_hello(plugin: Plugin) -> typer.Typer:
    """An author's executable: build's app, with a command of its own."""
    app = build(plugin)

    @app.command("hello")
    def hello(name: str = typer.Option("you", "--name")) -> None:
        print(f"hello {name}")

    return app


def test_an_authors_own_commands_still_run(capsys: pytest.CaptureFixture[str]) -> None:
    adapter = Adapter()
    assert said(lambda: run(adapter, app=lambda: with_hello(adapter)), ["hello", "--name", "ann"], capsys) == (
        0,
        "hello ann\n",
        "",
    )
    assert said(with_hello(adapter), ["hello"], capsys) == (0, "hello you\n", "")
    assert said(lambda: run(adapter, app=lambda: with_hello(adapter)), ["ports"], capsys)[1].startswith('{"count":2')
    assert "hello" in said(lambda: run(adapter, app=lambda: with_hello(adapter)), ["--help"], capsys)[1]


ADAPTER = """
from link_plugin.harness import Ports
from link_plugin.plugin import HarnessAdapter, run

class Quick(HarnessAdapter):
    name = "quick"

    def ports(self, ctx):
        return Ports(count=1)

run(Quick())
"""


def test_an_executable_answers_without_typer_or_asyncio_loaded(make_plugin: Callable[[str, str], Path]) -> None:
    executable = make_plugin("lnk-quick", ADAPTER)
    module = executable.with_name("lnk_quick.py")
    done = subprocess.run([sys.executable, "-X", "importtime", module, "ports"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, '{"count":1,"default":null}\n')
    loaded = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "pydantic" in loaded  # the answer is the contract's model
    assert not {"typer", "click", "asyncio", "link_plugin.commandline"} & loaded
    helped = subprocess.run([executable, "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "ports" in helped.stdout
