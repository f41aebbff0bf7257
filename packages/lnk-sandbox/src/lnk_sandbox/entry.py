"""`lnk-sandbox`: what the core runs at every start, answered without loading the whole CLI.

The core runs `lnk-sandbox run --request FILE` for every sandbox it starts (the harness, each
setup step, the health check, the memory tool) and asks `lnk-sandbox grants --json` before a
start. Those two forms are answered here with what they need alone: the request read by the
standard library (`request.py`), the grants as checked before (`standing.py`), the proxy loaded
by its first connection (`standby.py`). typer and pydantic are never imported for them: what
a start costs beyond bubblewrap's own is mostly Python's, starting here and in the relay. Every
other command, and any other form of these two (`--help` among them), goes to the CLI
(`cli.py`), which answers the same.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

from link_plugin.errors import ExitCode, LinkError

TYPE_CHECKING = False  # `typing` isn't loaded on a run's path (link_plugin.records)
if TYPE_CHECKING:
    from typing import NoReturn

GRANTS_OPTIONS = ("--agent", "--harness")


def main() -> None:
    args = sys.argv[1:]
    if args[:2] == ["run", "--request"] and len(args) == 3:
        _end(_run(args[2]))
    if len(args) == 2 and args[0] == "run" and args[1].startswith("--request="):
        _end(_run(args[1].removeprefix("--request=")))
    if args[:1] == ["grants"] and (options := _grants_options(args[1:])) is not None:
        _end(_grants(options.get("--agent", ""), options.get("--harness")))
    from lnk_sandbox.cli import main as cli

    cli()


def _end(code: int) -> NoReturn:
    """End now with `code`: what was said is flushed, every file written is closed, and nothing
    is left to tidy that the kernel doesn't, so the interpreter's own teardown is skipped."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):  # a reader that left takes nothing more
            stream.flush()
    os._exit(code)


def _run(path: str) -> int:
    from link_plugin.layout import Layout
    from lnk_sandbox.runner import run_request

    return run_request(Path(path), Layout.from_env())


def _grants_options(args: list[str]) -> dict[str, str] | None:
    """`--agent NAME [--harness H] --json` in any order; None for any other form (the CLI's)."""
    options: dict[str, str] = {}
    rest = list(args)
    json_asked = False
    while rest:
        arg = rest.pop(0)
        if arg == "--json" and not json_asked:
            json_asked = True
        elif arg in GRANTS_OPTIONS and arg not in options and rest and not rest[0].startswith("-"):
            options[arg] = rest.pop(0)
        else:
            return None
    return options if json_asked and "--agent" in options else None


def _grants(agent: str, harness: str | None) -> int:
    from link_plugin.layout import Layout
    from lnk_sandbox.permissions import sandbox_mode
    from lnk_sandbox.standing import Standing

    try:
        found = Standing.of(Layout.from_env(), agent, harness)
    except LinkError as exc:
        return failed(exc)
    print(json.dumps(found.in_force(sandbox_mode()), separators=(",", ":")))
    return 0


def failed(exc: LinkError) -> int:
    """A command's failure as the contract says: `{"error", "hint"}` on stdout, the same on stderr."""
    print(f"lnk-sandbox: {exc}", file=sys.stderr)
    print(json.dumps({"error": exc.message, "hint": exc.hint}, separators=(",", ":")))
    return ExitCode.FAILED
