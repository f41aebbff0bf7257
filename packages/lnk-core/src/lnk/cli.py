"""The `lnk` command.

`lnk --version` is answered here, before any command-line machinery loads (scripts and
installers ask it), and so is `lnk agent chat [NAME] -m TEXT...` to an agent already running:
typer builds a pydantic adapter for every option it parses, which costs a round trip more than
the message itself, and the chat reads what it needs of the agent's files without pydantic
(`lnk.runfiles`). Every other command, and any other form of those (`--help`, an agent not
running, which chat starts first), goes to the typer app of `lnk.commands.root`, whose groups and
commands are each imported when they run: `lnk agent chat` imports only what chatting needs.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

from link_plugin.errors import LinkError
from link_plugin.lean import skip_httpx_cli
from lnk import __version__


def version_line() -> str:
    return f"lnk {__version__}"


AGENT_COMMANDS = frozenset(
    {
        "start",
        "stop",
        "restart",
        "status",
        "list",
        "delete",
        "logs",
        "chat",
        "use",
        "approvals",
        "approve",
        "supervise",
        "keys",
        "memory",
        "connect",
        "disconnect",
        "allow",
        "deny",
        "permissions",
        "harness",
        "send",
        "receive",
        "sent",
        "schedules",
        "cancel",
        "backup",
        "restore",
    }
)


def _harness_verb(argv: list[str]) -> list[str]:
    """`lnk agent <harness> <verb> ...` reads as `lnk agent harness <verb> <harness> ...`."""
    if len(argv) >= 3 and argv[0] == "agent" and argv[1] not in AGENT_COMMANDS and not argv[1].startswith("-"):
        from lnk.commands.sandbox import HARNESS_VERBS

        if argv[2] in HARNESS_VERBS:
            return ["agent", "harness", argv[2], argv[1], *argv[3:]]
    return argv


def chat_messages(argv: list[str]) -> tuple[str, list[str]] | None:
    """(agent, messages) of `agent chat [NAME] (-m TEXT | --message TEXT | --message=TEXT)...`;
    None for any other form, which the typer app answers (a text starting with `-` among them)."""
    if argv[:2] != ["agent", "chat"]:
        return None
    from lnk.known import DEFAULT_AGENT

    name: str | None = None
    messages: list[str] = []
    rest = argv[2:]
    while rest:
        arg = rest.pop(0)
        if arg in ("-m", "--message") and rest and not rest[0].startswith("-"):
            messages.append(rest.pop(0))
        elif arg.startswith("--message=") and not arg.removeprefix("--message=").startswith("-"):
            messages.append(arg.removeprefix("--message="))
        elif not arg.startswith("-") and name is None:
            name = arg
        else:
            return None
    return (name or DEFAULT_AGENT, messages) if messages else None


def _chat_running(name: str, messages: list[str]) -> int | None:
    """Send `messages` to the agent `name` when it is running; None when it isn't (or doesn't
    exist, or its files don't read plainly: `lnk.runfiles`), where the typer app's chat answers."""
    import asyncio

    from link_plugin.endpoint import EndpointClient
    from link_plugin.layout import Layout
    from lnk.chat import Chat
    from lnk.runfiles import running_chat

    found = running_chat(Layout.from_env(), name)
    if found is None:
        return None
    chat = Chat(found.name, EndpointClient(found.endpoint, found), found.control)
    return asyncio.run(chat.run(messages))


def _end(code: int) -> NoReturn:
    """End now with `code`: what was said is flushed and nothing else is left to tidy (the chat's
    connections closed, its reader a daemon thread), so the interpreter's teardown of every module
    loaded, a tenth of a second of a short chat, is skipped."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a reader that left takes nothing more
            stream.flush()
    os._exit(code)


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print(version_line())
        return
    skip_httpx_cli()  # status and model serve talk HTTP; none runs httpx's own command line
    try:
        if (chat := chat_messages(sys.argv[1:])) is not None and (code := _chat_running(*chat)) is not None:
            _end(code)
        from lnk.commands.root import app

        app(args=_harness_verb(sys.argv[1:]), prog_name="lnk")
    except LinkError as exc:
        from rich.console import Console

        console = Console(stderr=True, highlight=False)
        console.print(f"[red]{exc.message}[/red]", markup=True)
        if exc.hint:
            console.print(exc.hint, markup=False)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
