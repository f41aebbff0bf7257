"""`lnk-scheduler`: the tool (`serve`, MCP over stdio) and what is due (`list`, `cancel`).

    lnk-scheduler serve --state ~/Link/Agents/main/Scheduler
    lnk-scheduler list --state ... [--json]
    lnk-scheduler cancel ID --state ...
    lnk-scheduler run < runner-spec.json

`serve` is what Link defines as the agent's tool `scheduler-<id>`; `run` is the runner Link keeps
beside the agent's channel bridges (its spec on stdin); `list` and `cancel` are what
`lnk agent schedules` asks, so Link reads no file of the scheduler's itself.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from lnk_scheduler import __version__

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Link Scheduler: subagents, schedules, messages.")
State = Annotated[Path, typer.Option("--state", help="The agent's scheduler folder (~/Link/Agents/<agent>/Scheduler).")]


@app.command("serve", help="Serve the scheduler's tools over stdio (MCP).")
def serve(state: State) -> None:
    from lnk_scheduler.server import build
    from lnk_scheduler.store import Store
    from lnk_scheduler.tool import Scheduler, Settings

    build(Scheduler(Store(state), Settings.from_env())).run("stdio")


@app.command("run", help="Say what is due to the agent, and send the answers on (a RunnerSpec on stdin).")
def run() -> None:
    from link_plugin.endpoint import EndpointClient
    from link_plugin.scheduler import RunnerSpec
    from lnk_scheduler.runner import serve

    try:
        spec = RunnerSpec.model_validate_json(sys.stdin.readline())
    except ValueError as exc:
        print(f"lnk-scheduler run: stdin holds no runner spec ({exc})", file=sys.stderr)
        raise typer.Exit(2) from None
    client = EndpointClient(spec.endpoint, spec.agent)
    serve(Path(spec.state), client, spec.channels, _say, narrows=spec.endpoint.tools)


def _say(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} scheduler: {line}", file=sys.stderr, flush=True)


@app.command("list", help="What is scheduled, soonest first.")
def list_(state: State, as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False) -> None:
    from link_plugin.scheduler import Schedules
    from lnk_scheduler.store import Store

    listed = Schedules(schedules=[due.scheduled() for due in Store(state).all() if due.kind == "schedule"])
    if as_json:
        print(listed.model_dump_json())
        return
    for item in listed.schedules:
        repeat = f"  {item.repeat}" if item.repeat else ""
        print(f"{item.id}  {item.at}{repeat}  {item.title or item.text[:60]}")


@app.command("cancel", help="Cancel a schedule by its id.")
def cancel(ident: Annotated[str, typer.Argument(metavar="ID")], state: State) -> None:
    from lnk_scheduler.store import Store

    if Store(state).cancel(ident) is None:
        print(json.dumps({"error": f"There is no schedule {ident!r}.", "hint": "`list` names them."}))
        raise typer.Exit(1)
    print(json.dumps({"cancelled": ident}))


@app.command("version", help="This release.")
def version() -> None:
    print(__version__)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
