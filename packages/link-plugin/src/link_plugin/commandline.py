"""The typer app of a plugin executable: every command of its contract, its help, its usage errors.

`plugin.build(plugin)` returns it, and `plugin.run` hands it every command line it doesn't
answer itself. A command without arguments answers through the same call `run` makes
(`plugin.plain`), so both say the same.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from link_plugin import channel as channel_contract
from link_plugin.answers import parse_answer
from link_plugin.contract import CONTRACT_VERSION, Command
from link_plugin.errors import ExitCode
from link_plugin.plugin import (
    ChannelContext,
    ChannelPlugin,
    HarnessAdapter,
    HarnessContext,
    MemoryContext,
    MemoryEngine,
    Plugin,
    answer,
    plain,
    say,
)


def typer_app(plugin: Plugin) -> typer.Typer:
    """The typer app answering every command of the plugin's contract."""
    app = typer.Typer(
        name=f"lnk-{plugin.name}",
        help=f"lnk-{plugin.name}: a Link {plugin.kind.value} plugin (contract {CONTRACT_VERSION}).",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    calls = plain(plugin)
    _command(app, plugin, "contract", calls["contract"], "The plugin's kind, name and contract version.")
    if isinstance(plugin, HarnessAdapter):
        _harness_commands(app, plugin, calls)
    elif isinstance(plugin, MemoryEngine):
        _memory_commands(app, plugin, calls)
    elif isinstance(plugin, ChannelPlugin):
        _channel_commands(app, plugin, calls)
    return app


def _finish(plugin: Plugin, command: str, call: Callable[[], Any]) -> None:
    """Run one command and end the process with the contract's exit code."""
    raise typer.Exit(answer(plugin, command, call))


def _doc(commands: tuple[Command, ...], name: str) -> str:
    return next(c.doc for c in commands if c.name == name)


def _command(app: typer.Typer, plugin: Plugin, name: str, call: Callable[[], Any], doc: str | None = None) -> None:
    """A command taking no arguments, answered by its call."""

    def command() -> None:
        _finish(plugin, name, call)

    app.command(name, help=doc or _doc(plugin.commands, name))(command)


def _harness_commands(app: typer.Typer, plugin: HarnessAdapter, calls: dict[str, Callable[[], Any]]) -> None:
    for name, call in calls.items():
        if name != "contract":
            _command(app, plugin, name, call)

    @app.command("link", help=_doc(plugin.commands, "link"))
    def link(channel: str) -> None:
        _finish(plugin, "link", lambda: plugin.link(HarnessContext(), channel))


def _memory_commands(app: typer.Typer, plugin: MemoryEngine, calls: dict[str, Callable[[], Any]]) -> None:
    _command(app, plugin, "install", calls["install"])

    @app.command("command", help=_doc(plugin.commands, "command"))
    def command(folder: Path, state: Path) -> None:
        _finish(plugin, "command", lambda: plugin.command(MemoryContext(), folder, state))


def _channel_commands(app: typer.Typer, plugin: ChannelPlugin, calls: dict[str, Callable[[], Any]]) -> None:
    _command(app, plugin, "describe", calls["describe"])

    @app.command("connect", help=_doc(plugin.commands, "connect"))
    def connect(
        token_stdin: bool = typer.Option(False, "--token-stdin", help="Read the secret from stdin."),
    ) -> None:
        _finish(plugin, "connect", lambda: plugin.connect(ChannelContext(), token_stdin))

    @app.command("bridge", help=_doc(plugin.commands, "bridge"))
    def bridge() -> None:
        line = sys.stdin.readline()
        if not line.strip():
            say("bridge reads its BridgeSpec as one JSON line on stdin; none came.")
            raise typer.Exit(ExitCode.USAGE)
        spec = parse_answer(channel_contract.BridgeSpec, line, source="the BridgeSpec on stdin")
        _finish(plugin, "bridge", lambda: plugin.bridge(spec))

    for name in ("link", "state", "disconnect"):
        _command(app, plugin, name, calls[name])
