"""`lnk-signal`'s typer app, which `cli.main` makes for what it doesn't answer at once: the channel
contract's commands, and `cli`, which installs and links signal-cli for Link's own bridge or for
a harness that speaks Signal itself.

    lnk-signal cli install [--into <folder>]   the pinned signal-cli and Java, checked, in <folder>
    lnk-signal cli link [--into <folder>]      link it there as a device (a QR code in the terminal)

`<folder>` is the channel's folder (`LNK_CHANNEL_DIR`) by default, or the home of a harness that
speaks Signal itself, which gets the program's path in its Signal settings. Each prints one
`{ok, detail}` answer: where the program is, or the account linked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from link_plugin.errors import ExitCode, LinkError
from link_plugin.harness import Done
from link_plugin.plugin import ChannelContext, build, say
from lnk_signal.install import folder, install
from lnk_signal.plugin import Signal, home, linked

app = build(Signal())
cli = typer.Typer(help="Install and link signal-cli (the program Signal is reached through).", no_args_is_help=True)
app.add_typer(cli, name="cli")

Into = Annotated[
    Path | None, typer.Option("--into", help="The folder to install in (default: the channel's, $LNK_CHANNEL_DIR).")
]


def _answer(done: Callable[[Path], Done], into: Path | None) -> None:
    """One `{ok, detail}` on stdout; a LinkError as the contract's error answer, never a traceback."""
    try:
        answer = done(into or home(ChannelContext()))
    except LinkError as exc:
        say(f"lnk-signal: {exc}")
        print(json.dumps({"error": exc.message, "hint": exc.hint}))
        raise typer.Exit(ExitCode.FAILED) from None
    print(answer.to_json())


@cli.command("install", help="Install the pinned signal-cli and its Java runtime, each checked by SHA-256.")
def install_command(into: Into = None) -> None:
    def done(target: Path) -> Done:
        found = install(target, say)
        return Done(ok=True, detail=str(folder(target) / found.program_folder / "bin" / "signal-cli"))

    _answer(done, into)


@cli.command("link", help="Link signal-cli as a device of your Signal account (installing it first).")
def link_command(into: Into = None) -> None:
    _answer(lambda target: linked(target, ChannelContext().agent or "main"), into)
