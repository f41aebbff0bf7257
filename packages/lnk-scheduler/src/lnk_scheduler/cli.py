"""`lnk-scheduler`: the tool (`serve`, MCP over stdio) and what is due (`list`, `cancel`).

    lnk-scheduler serve --state ~/Link/Agents/main/Scheduler
    lnk-scheduler list --state ... [--json]
    lnk-scheduler cancel ID --state ...
    lnk-scheduler run < runner-spec.json
    lnk-scheduler tools

`serve` is what Link defines as the agent's tool `scheduler-<id>`; `run` is the runner Link keeps
beside the agent's channel bridges (its spec on stdin); `list` and `cancel` are what
`lnk agent schedules` asks, so Link reads no file of the scheduler's itself. `tools` prints what
`serve` lists (lnk_scheduler.listing), which Link answers a harness's first listing from.

Link starts `run` at every agent start, alone on its command line: `main` answers it at once,
without importing typer or building its app (a third of the runner's start-up CPU); a bare `tools`
likewise, so that a listing costs no more than reading a file. Every other command line,
`run --help` among them, goes to the typer app (lnk_scheduler.commands), which answers a bare
`run` and `tools` through the same functions.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def run() -> int:
    """The runner, until it is stopped; 2 if stdin holds no runner spec."""
    from link_plugin.endpoint import EndpointClient
    from link_plugin.scheduler import RunnerSpec
    from lnk_scheduler.runner import serve

    try:
        spec = RunnerSpec.model_validate_json(sys.stdin.readline())
    except ValueError as exc:
        print(f"lnk-scheduler run: stdin holds no runner spec ({exc})", file=sys.stderr)
        return 2
    client = EndpointClient(spec.endpoint, spec.agent)
    serve(Path(spec.state), client, spec.channels, _say, narrows=spec.endpoint.tools)
    return 0


def tools() -> int:
    """What `serve` lists, as its MCP `tools/list` result (JSON)."""
    from lnk_scheduler.listing import shipped

    sys.stdout.write(shipped())
    return 0


def _say(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} scheduler: {line}", file=sys.stderr, flush=True)


def main() -> None:
    try:
        if sys.argv[1:] == ["run"]:
            sys.exit(run())
        if sys.argv[1:] == ["tools"]:
            sys.exit(tools())
        from lnk_scheduler.commands import app

        app()
    except KeyboardInterrupt:
        sys.exit(130)
