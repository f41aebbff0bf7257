"""The agent's supervisor: runs its harness and its channels' bridges, and restarts what crashes.

One process per agent where no `systemd --user` runs (detached, or in the terminal with
--foreground); under systemd a unit per part (harness, bridges) and systemd restarts the supervisor.
It also serves the agent's tools (the tool bridge, loaded when first needed: tools_on_demand),
the gateway when the harness runs without a sandbox, and the control socket.

`python -m lnk.supervisor <agent> [--part harness|bridges]...` is what a start spawns and a unit
runs: no command-line framework, so the harness is spawned as soon as the agent is read, and
the gateway loads while it starts. A run, in order:

1. the harness is spawned (children), before anything else loads;
2. the harness part's sockets listen (listening), and it keeps the harness running (keeper,
   ready once it answers: readiness) while lnk loads its servers;
3. the bridges part waits for the harness to answer, then keeps each channel's bridge (bridges)
   and Link Scheduler's runner (scheduler);
4. each part is marked running once the harness answers: what connects to lnk's sockets before
   their servers run waits in the sockets' backlog;
5. the harness part serves its sockets (gateway.listeners), its modules loaded off the event loop so
   the harness's readiness is asked meanwhile;
6. the tool bridge (an MCP server; tool_targets says where each tool runs) loads at the first
   request that needs it: a tool request, memory's status. An agent with Link Memory loads it
   right away, and starts memory's engine once the harness answers, so memory indexes from the
   start. Everything stops on a signal, or when the harness can't start at all.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import signal
import sys
import time
from asyncio.subprocess import Process
from contextlib import AsyncExitStack, suppress
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from link_plugin.errors import LinkError
from link_plugin.layout import Layout
from link_plugin.lean import skip_httpx_cli
from link_plugin.waits import within
from lnk.agents import Agent, load_agent
from lnk.approvals import Approvals
from lnk.bridges import kept_bridge
from lnk.children import end, spawn
from lnk.harnesses import clean_env
from lnk.keeper import Keeper, Kept, pause
from lnk.listening import Sockets, agent_sockets
from lnk.readiness import HarnessReadiness
from lnk.runstate import PARTS, Child, PartState, RunSpec, read_spec, read_state, write_state
from lnk.sandboxing import run_argv, write_request
from lnk.scheduler import kept_runner
from lnk.scheduler import tool_name as scheduler_tool
from lnk.tool_targets import tool_target
from lnk.tools_on_demand import ToolsOnDemand

if TYPE_CHECKING:
    from lnk.gateway import Listener


class Supervisor:
    def __init__(self, agent: Agent, spec: RunSpec, parts: tuple[str, ...], foreground: bool) -> None:
        self.agent = agent
        self.spec = spec
        self.parts = parts
        self.foreground = foreground
        self.stopping = asyncio.Event()
        self.harness_up = asyncio.Event()
        self.failed: str | None = None
        self.states = {part: PartState(pid=os.getpid(), mode=spec.mode) for part in parts}
        self.log = agent.logs / "agent.log"
        self.approvals = Approvals()
        self.tools: ToolsOnDemand | None = None

    # --- telling -----------------------------------------------------------------------------

    def say(self, text: str) -> None:
        line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} lnk: {text}"
        print(line, file=sys.stderr, flush=True)
        if self.foreground:
            with self.log.open("a") as handle:
                handle.write(line + "\n")

    def save(self, part: str) -> None:
        write_state(self.agent.run.state(part), self.states[part])

    def child(self, part: str, name: str) -> Child:
        return self.states[part].children.setdefault(name, Child())

    def fail(self, reason: str) -> None:
        self.failed = reason
        self.say(reason)
        for part, state in self.states.items():
            state.state, state.error = "failed", reason
            self.save(part)
        self.stopping.set()

    async def status(self) -> dict[str, Any]:
        memory: Any = None
        name = f"memory-{self.agent.id}"
        if self.tools is not None and name in self.tools.names:
            try:
                memory = await within(self.tools.status(name), 5.0)
            except Exception as exc:
                memory = {"error": str(exc) or type(exc).__name__}
        return {
            "parts": {part: state.model_dump(mode="json") for part, state in self.states.items()},
            "memory": memory,
            "waiting": len(self.approvals.waiting()),
        }

    # --- running -----------------------------------------------------------------------------

    async def run(self) -> int:
        self._catch_signals()
        for part in self.parts:
            self.save(part)
        first = await self._spawn_early()
        tasks: list[asyncio.Task[Any]] = []
        listeners: list[Listener] = []
        async with AsyncExitStack() as running:
            sockets = self._sockets() if "harness" in self.parts else None
            if sockets is not None:
                tasks.append(asyncio.create_task(self.keep("harness", self._kept_harness(), first)))
            if "bridges" in self.parts:
                tasks.append(asyncio.create_task(self.run_bridges()))
            if not self.stopping.is_set():
                tasks.append(asyncio.create_task(self.mark_running()))
            tools = await self._tools(running)
            if sockets is not None and not self.stopping.is_set():
                listeners, served = await self._run_harness(tools, sockets)
                tasks += served
            await self.stopping.wait()
            self.say("stopping")
            for listener in listeners:
                listener.stop()
            await asyncio.gather(*tasks, return_exceptions=True)
        if first is not None:
            await end(first)  # never handed to its keeper: lnk failed before it could run it
        self._mark_stopped()
        return 1 if self.failed else 0

    def _catch_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stopping.set)

    async def _spawn_early(self) -> Process | None:
        """The harness starts while lnk loads its own servers: both take a moment."""
        if "harness" in self.parts:
            with suppress(OSError, LinkError):
                return await self.spawn_harness()
        return None

    def _sockets(self) -> Sockets | None:
        try:
            return agent_sockets(self.agent, self.spec)
        except OSError as exc:
            self.fail(f"lnk could not listen for the agent's tools: {exc}")
            return None

    async def _tools(self, running: AsyncExitStack) -> ToolsOnDemand | None:
        """The agent's tools, their bridge loaded when first needed; it stops as `running` ends."""
        if not self.spec.tools or self.stopping.is_set():
            return None
        target = partial(tool_target, self.agent, self.spec)
        log = self.agent.logs / "tools.log"
        tools = ToolsOnDemand(self.spec.tools, self.approvals, log, target, self.agent.layout)
        return await running.enter_async_context(tools.serving())

    async def _run_harness(
        self, tools: ToolsOnDemand | None, sockets: Sockets
    ) -> tuple[list[Listener], list[asyncio.Task[Any]]]:
        """The harness part's sockets served, and memory warmed once the harness answers."""
        self.tools = tools
        await asyncio.to_thread(importlib.import_module, "lnk.gateway")  # the harness's readiness is asked meanwhile
        from lnk.gateway import listeners

        served = listeners(self.agent, self.spec, self.approvals, self.status, tools, sockets)
        tasks = [asyncio.create_task(listener.serve()) for listener in served]
        memory = f"memory-{self.agent.id}"
        if tools is not None and memory in tools.names:
            tools.load()  # after the gateway's modules: one import at a time
            tasks.append(asyncio.create_task(self._warm(tools, memory)))
        return served, tasks

    def _mark_stopped(self) -> None:
        for part, state in self.states.items():
            if state.state != "failed":
                state.state = "stopped"
                self.save(part)

    # --- keeping the children ------------------------------------------------------------------

    async def keep(self, part: str, kept: Kept, first: Process | None = None) -> None:
        await Keeper(kept, self.child(part, kept.name), self, lambda: self.save(part)).run(first)

    async def spawn_harness(self) -> Process:
        spec = self.spec
        if spec.request is not None:
            argv = run_argv(write_request(self.agent, spec.request, "harness"))
            return await spawn(argv, dict(os.environ), spec.cwd, self.log, asyncio.subprocess.DEVNULL)
        env = clean_env(Path(spec.harness_home), spec.env)
        return await spawn(spec.argv, env, spec.cwd, self.log, asyncio.subprocess.DEVNULL)

    def _kept_harness(self) -> Kept:
        """The harness must start, and is ready once it answers on its endpoint (or is healthy)."""
        return Kept(
            name="harness",
            spawn=self.spawn_harness,
            ready=HarnessReadiness(self.agent, self.spec, self.stopping).harness_ready,
            log=self.log,
            must_start=True,
            answers=True,
            on_ready=self.harness_up.set,
        )

    async def run_bridges(self) -> None:
        """Each channel's bridge, and the scheduler's runner beside them (it says what is due to the
        endpoint, and its answers go out through the bridges)."""
        endpoint = self.spec.endpoint
        runs = any(tool.name == scheduler_tool(self.agent) for tool in self.spec.tools)
        if endpoint is None or not (self.spec.bridges or runs) or not await self.wait_for_harness():
            return  # a harness without an endpoint speaks to its channels itself
        kept = [kept_bridge(self.agent, endpoint, ch) for ch in self.spec.bridges]
        if runs:
            kept.append(kept_runner(self.agent, endpoint))
        await asyncio.gather(*(self.keep("bridges", one) for one in kept))

    async def wait_for_harness(self) -> bool:
        """Bridges start once the harness answers: in this process, or in the harness's own service."""
        if "harness" in self.parts:
            waiter = asyncio.create_task(self.harness_up.wait())
            stop = asyncio.create_task(self.stopping.wait())
            await asyncio.wait({waiter, stop}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            stop.cancel()
            return self.harness_up.is_set()
        while not self.stopping.is_set():
            state = read_state(self.agent.run.state("harness"))
            if state is not None and state.state == "running":
                return True
            await pause(self.stopping, 0.5)
        return False

    async def _warm(self, tools: ToolsOnDemand, name: str) -> None:
        """Memory starts with the agent, so it indexes before the first question: once the harness
        answers, so its sandbox, session and engine don't take the CPU the harness starts on."""
        if not await self.wait_for_harness():
            return
        try:
            await (await tools.bridge()).backends[name].client()
        except Exception as exc:
            self.say(f"{name} did not start: {exc}")

    async def mark_running(self) -> None:
        """Each part is running once its harness answers (the bridges part: once its bridges started)."""
        if await self.wait_for_harness():
            for part, state in self.states.items():
                if state.state == "starting":
                    state.state = "running"
                    self.save(part)


def supervise(agent: Agent, parts: tuple[str, ...], foreground: bool) -> int:
    spec = read_spec(agent)
    if spec is None:
        raise LinkError(f"{agent.name} has never been started here.", f"`lnk agent start {agent.name}`.")
    return asyncio.run(Supervisor(agent, spec, parts, foreground).run())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lnk.supervisor", description="Run an agent's services.")
    parser.add_argument("agent")
    parser.add_argument("--part", action="append", choices=PARTS, help="harness or bridges (default: both)")
    args = parser.parse_args(argv)
    skip_httpx_cli()  # the gateway talks HTTP; httpx's own command line is never run
    try:
        return supervise(load_agent(Layout.from_env(), args.agent), tuple(args.part or PARTS), foreground=False)
    except LinkError as exc:
        print(f"lnk: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
