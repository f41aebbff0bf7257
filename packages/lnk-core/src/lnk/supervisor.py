"""The agent's supervisor: runs its harness and its channels' bridges, and restarts what crashes.

One process per agent where no `systemd --user` runs (detached, or in the terminal with
--foreground); under systemd a unit per part (harness, bridges) and systemd restarts the supervisor.
It also serves the agent's tools (the tool bridge), the gateway when the harness runs without a
sandbox, and the control socket.

`python -m lnk.supervisor <agent> [--part harness|bridges]...` is what a start spawns and a unit
runs: no command-line framework, so the harness is spawned as soon as the agent is read, and
the tool bridge and gateway load while it starts.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from link_plugin.calls import PluginProgram
from link_plugin.channel import BridgeSpec
from link_plugin.contract import CONTRACT_VERSION, Kind
from link_plugin.endpoint import EndpointClient
from link_plugin.errors import LinkError
from link_plugin.harness import AgentRef, Health
from link_plugin.layout import Layout
from link_plugin.lean import skip_httpx_cli
from link_plugin.providers import PROVIDERS
from link_plugin.sandbox import SandboxRequest
from lnk.agents import Agent, load_agent
from lnk.approvals import Approvals
from lnk.channels import ChannelEntry, secrets_of
from lnk.harnesses import clean_env
from lnk.known import channel_executable
from lnk.plugins import require
from lnk.runstate import PARTS, Child, PartState, RunSpec, read_spec, read_state, write_state
from lnk.sandboxing import answer_in_sandbox, program_reads, run_argv, write_request
from lnk.tooldefs import ToolDef

if TYPE_CHECKING:
    from lnk.gateway import Listener
    from lnk.toolbridge import Target, ToolBridge

START_TIMEOUT = float(os.environ.get("LNK_START_TIMEOUT", "120"))
"""How long a harness may take to answer after it starts (OpenClaw's is about 90 s)."""
HEALTHY_RESET = 60.0
"""A child that ran this long starts its backoff over."""
STOP_GRACE = 5.0


def _die_with_parent() -> None:
    """In the child, before exec: end when the supervisor does, even if it is killed."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


async def _spawn(argv: list[str], env: dict[str, str], cwd: str | None, log: Path, stdin: int | None) -> Any:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            *argv,
            env=env,
            cwd=cwd,
            stdin=stdin,
            stdout=out,
            stderr=out,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )


async def _end(process: Any) -> None:
    """SIGTERM to the child's process group, then SIGKILL after a grace period."""
    if process.returncode is not None:
        return
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), STOP_GRACE)
    except TimeoutError:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()


def _tail(path: Path, lines: int = 12) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


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
        self.bridge: ToolBridge | None = None

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

    # --- the generic keeper ------------------------------------------------------------------

    async def keep(
        self,
        part: str,
        name: str,
        spawn: Callable[[], Awaitable[Any]],
        ready: Callable[[Any], Awaitable[bool]],
        log: Path,
        must_start: bool,
        first: Any = None,
        answers: bool = False,
    ) -> None:
        """Run a child (`first`, when it was started already), restart it when it ends, with a
        growing pause; stop it when told.

        With `answers`, being ready means the child answered (the harness proved itself on its
        endpoint): one that answered and ended after is started again at once, its pause over,
        however often that happens, since someone may be waiting for its answer; the pause grows
        only while it keeps ending before it answers. A bridge's readiness says only that it runs,
        so a bridge that keeps ending waits longer each time."""
        child = self.child(part, name)
        backoff = 1.0
        ever_ready = False
        while not self.stopping.is_set():
            answered = False
            try:
                process = first if first is not None else await spawn()
                first = None
            except (OSError, LinkError) as exc:
                child.state, child.detail = "failed", str(exc)
                self.save(part)
                if must_start and not ever_ready:
                    return self.fail(f"{name} could not be started: {exc}")
                await self.pause(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            child.pid, child.state, child.since = process.pid, "starting", time.time()
            self.save(part)
            if await ready(process):
                ever_ready = answered = True
                child.state, child.since = "running", time.time()
                self.save(part)
                self.say(f"{name} is running (pid {process.pid})")
                if name == "harness":
                    self.harness_up.set()
            elif process.returncode is None and not self.stopping.is_set():
                self.say(f"{name} didn't answer within {START_TIMEOUT:.0f} s; stopping it")
                await _end(process)
            began = time.monotonic()
            ended = asyncio.create_task(process.wait())
            stop = asyncio.create_task(self.stopping.wait())
            await asyncio.wait({ended, stop}, return_when=asyncio.FIRST_COMPLETED)
            stop.cancel()
            if self.stopping.is_set():
                await _end(process)
                child.state, child.pid = "stopped", None
                self.save(part)
                return
            child.exit = process.returncode
            if must_start and not ever_ready:
                tail = _tail(log)
                return self.fail(
                    f"{name} ended (exit {process.returncode}) before it answered." + (f"\n{tail}" if tail else "")
                )
            child.restarts += 1
            child.state, child.pid = "restarting", None
            self.save(part)
            if answers and answered:
                self.say(f"{name} ended (exit {process.returncode}); starting it again")
                backoff = 1.0
                continue
            if time.monotonic() - began > HEALTHY_RESET:
                backoff = 1.0
            self.say(f"{name} ended (exit {process.returncode}); starting it again in {backoff:.0f} s")
            await self.pause(backoff)
            backoff = min(backoff * 2, 30.0)

    async def pause(self, seconds: float) -> None:
        with suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), seconds)

    def fail(self, reason: str) -> None:
        self.failed = reason
        self.say(reason)
        for part, state in self.states.items():
            state.state, state.error = "failed", reason
            self.save(part)
        self.stopping.set()

    # --- the harness -------------------------------------------------------------------------

    def tool_target(self, tool: ToolDef) -> Target:
        from mcp import StdioServerParameters

        if tool.url is not None:
            return tool.url
        if tool.sandboxed and self.spec.sandboxed:
            request = SandboxRequest(
                agent=self.agent.name,
                mode="tool",
                argv=tool.argv,
                env=tool.env,
                cwd=tool.cwd,
                reads=tool.reads,
                writes=tool.writes,
                model_port=tool.model_port,
            )
            argv = run_argv(write_request(self.agent, request, f"tool-{tool.name}"))
            return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        # Memory's environment is the engine's answer on top of nothing; a tool of the owner's runs as they do.
        env = tool.env if tool.sandboxed else {**os.environ, **tool.env}
        return StdioServerParameters(command=tool.argv[0], args=tool.argv[1:], env=env, cwd=tool.cwd)

    async def spawn_harness(self) -> Any:
        spec = self.spec
        if spec.request is not None:
            argv = run_argv(write_request(self.agent, spec.request, "harness"))
            return await _spawn(argv, dict(os.environ), spec.cwd, self.log, asyncio.subprocess.DEVNULL)
        env = clean_env(Path(spec.harness_home), spec.env)
        return await _spawn(spec.argv, env, spec.cwd, self.log, asyncio.subprocess.DEVNULL)

    async def harness_ready(self, process: Any) -> bool:
        deadline = time.monotonic() + START_TIMEOUT
        next_health = 0.0
        endpoint = self.spec.endpoint
        # The endpoint's own client proves it is ours (link_plugin's one check of the proof).
        agent = AgentRef(name=self.agent.name, id=self.agent.id, owner=self.agent.settings.owner)
        client = EndpointClient(endpoint, agent, timeout=2.0) if endpoint is not None else None
        while process.returncode is None and time.monotonic() < deadline and not self.stopping.is_set():
            if client is not None:
                if await client.ready():
                    return True
            elif time.monotonic() >= next_health:
                next_health = time.monotonic() + 1.0
                if await self._adapter_healthy():
                    return True
            await self.pause(0.05)
        return False

    async def _connects(self, url: str) -> bool:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(parts.hostname, parts.port), 1.0)
        except (OSError, TimeoutError):
            return False
        writer.close()
        return True

    def _health(self) -> Health:
        """The adapter's `health`: in the sandbox (no network, only the agent's ports) when the harness is."""
        spec = self.spec
        if spec.sandboxed:
            request = SandboxRequest(
                agent=self.agent.name,
                mode="health",
                harness=spec.harness,
                argv=[spec.adapter, "health"],
                env=spec.env,
                cwd=spec.harness_home,
                reads=program_reads([spec.adapter]),
                ports=spec.ports[:-1],
            )
            answered = answer_in_sandbox(self.agent, request, Health, "health")
            return answered or Health(ok=None)
        program = PluginProgram(spec.adapter, env=clean_env(Path(spec.harness_home)), timeout=10.0)
        return program.ask_as(Health, Kind.HARNESS, "health", (), env=spec.env)

    async def _adapter_healthy(self) -> bool:
        spec = self.spec
        try:
            health = await asyncio.to_thread(self._health)
        except LinkError:
            return False
        if health.ok is None:
            return await self._connects(f"http://127.0.0.1:{spec.ports[0]}")
        return health.ok

    # --- the bridges -------------------------------------------------------------------------

    def spawn_bridge(self, channel: str) -> Callable[[], Awaitable[Any]]:
        async def spawn() -> Any:
            agent = load_agent(self.agent.layout, self.agent.name)
            entry = ChannelEntry.of(agent, channel)
            assert self.spec.endpoint is not None
            spec = BridgeSpec(
                contract=CONTRACT_VERSION,
                agent=AgentRef(name=agent.name, id=agent.id, owner=agent.settings.owner),
                endpoint=self.spec.endpoint,
                section=entry.section,
                secrets=secrets_of(agent, channel, entry),
                folder=str(agent.config.channel(channel)),
                steered=entry.steered,
                approvals=str(agent.run.control),
            )
            argv = [require(channel_executable(channel)), "bridge"]
            process = await _spawn(argv, dict(os.environ), None, self.bridge_log(channel), asyncio.subprocess.PIPE)
            process.stdin.write(spec.model_dump_json().encode() + b"\n")
            await process.stdin.drain()
            process.stdin.close()
            return process

        return spawn

    def bridge_log(self, channel: str) -> Path:
        return self.agent.logs / f"bridge-{channel}.log"

    async def bridge_ready(self, process: Any) -> bool:
        """A bridge says nothing of itself: it runs while its process does (one that ends is started again)."""
        return process.returncode is None

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
            await self.pause(0.5)
        return False

    # --- status --------------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        memory: Any = None
        name = f"memory-{self.agent.id}"
        if self.bridge is not None and name in self.bridge.backends:
            try:
                memory = await asyncio.wait_for(self.bridge.status(name), 5.0)
            except Exception as exc:
                memory = {"error": str(exc) or type(exc).__name__}
        return {
            "parts": {part: state.model_dump(mode="json") for part, state in self.states.items()},
            "memory": memory,
            "waiting": len(self.approvals.waiting()),
        }

    # --- running -----------------------------------------------------------------------------

    def listeners(self, bridge: ToolBridge | None) -> list[Listener]:
        from lnk.gateway import Gateway, Listener, ModelRelay, control_app, loopback_socket, unix_socket

        spec = self.spec
        found = [Listener(control_app(self.approvals, self.status), unix_socket(self.agent.run.control))]
        if spec.sandboxed:
            found.append(Listener(Gateway(bridge, None), unix_socket(self.agent.layout.tools_socket(spec.id))))
        else:
            relay = ModelRelay(PROVIDERS[spec.provider], self.agent.keys) if spec.provider else None
            found.append(Listener(Gateway(bridge, spec.secret, relay), loopback_socket(spec.gateway)))
        return found

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.stopping.set)
        for part in self.parts:
            self.save(part)
        tasks: list[asyncio.Task[Any]] = []
        listeners: list[Listener] = []
        first = None
        if "harness" in self.parts:
            # The harness starts while lnk loads its own servers: both take a moment.
            with suppress(OSError, LinkError):
                first = await self.spawn_harness()
        async with AsyncExitStack() as running:
            bridge = None
            if self.spec.tools:  # an MCP server (about a second of imports) only for an agent with tools
                from lnk.toolbridge import CallLog, ToolBridge

                calls = CallLog(self.agent.logs / "tools.log")
                bridge = ToolBridge(self.spec.tools, self.approvals, calls, self.tool_target)
                await running.enter_async_context(bridge.running())
            if "harness" in self.parts:
                self.bridge = bridge
                try:
                    listeners = self.listeners(bridge)
                except OSError as exc:
                    self.fail(f"lnk could not listen for the agent's tools: {exc}")
                tasks += [asyncio.create_task(listener.serve()) for listener in listeners]
                memory = f"memory-{self.agent.id}"
                if bridge is not None and memory in bridge.backends:
                    tasks.append(asyncio.create_task(self._warm(bridge, memory)))
                keeper = self.keep(
                    "harness", "harness", self.spawn_harness, self.harness_ready, self.log, True, first, answers=True
                )
                tasks.append(asyncio.create_task(keeper))
            if "bridges" in self.parts:
                tasks.append(asyncio.create_task(self.run_bridges()))
            if not self.stopping.is_set():
                tasks.append(asyncio.create_task(self.mark_running()))
            await self.stopping.wait()
            self.say("stopping")
            for listener in listeners:
                listener.stop()
            await asyncio.gather(*tasks, return_exceptions=True)
        if first is not None:
            await _end(first)  # never handed to its keeper: lnk failed before it could run it
        for part, state in self.states.items():
            if state.state != "failed":
                state.state = "stopped"
                self.save(part)
        return 1 if self.failed else 0

    async def _warm(self, bridge: ToolBridge, name: str) -> None:
        """Memory starts with the agent, so it indexes before the first question: once the harness
        answers, so its sandbox, session and engine don't take the CPU the harness starts on."""
        if not await self.wait_for_harness():
            return
        try:
            await bridge.backends[name].client()
        except Exception as exc:
            self.say(f"{name} did not start: {exc}")

    async def run_bridges(self) -> None:
        if not self.spec.bridges or not await self.wait_for_harness():
            return
        await asyncio.gather(
            *(
                self.keep(
                    "bridges", f"bridge:{ch}", self.spawn_bridge(ch), self.bridge_ready, self.bridge_log(ch), False
                )
                for ch in self.spec.bridges
            )
        )

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
