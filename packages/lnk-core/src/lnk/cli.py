"""The `lnk` command.

`lnk --version` is answered here, before any command-line machinery loads (scripts and
installers ask it). Every other command goes to the typer app of `lnk.commands.root`, whose
groups and commands are each imported when they run: `lnk agent chat` imports only what
chatting needs.
"""

from __future__ import annotations

import sys

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
    }
)


def _harness_verb(argv: list[str]) -> list[str]:
    """`lnk agent <harness> <verb> ...` reads as `lnk agent harness <verb> <harness> ...`."""
    if len(argv) >= 3 and argv[0] == "agent" and argv[1] not in AGENT_COMMANDS and not argv[1].startswith("-"):
        from lnk.commands.sandbox import HARNESS_VERBS

        if argv[2] in HARNESS_VERBS:
            return ["agent", "harness", argv[2], argv[1], *argv[3:]]
    return argv


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print(version_line())
        return
    skip_httpx_cli()  # status and model serve talk HTTP; none runs httpx's own command line
    from lnk.commands.root import app

    try:
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
