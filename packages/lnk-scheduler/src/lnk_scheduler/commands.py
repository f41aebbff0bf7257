"""`lnk-scheduler`'s command line (typer), for every command but a bare `run` (lnk_scheduler.cli)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from lnk_scheduler import __version__, cli

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
    code = cli.run()
    if code:
        raise typer.Exit(code)


@app.command("tools", help="What `serve` lists: its MCP tools/list result (JSON), without starting it.")
def tools() -> None:
    cli.tools()


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
