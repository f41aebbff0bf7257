"""Starting a harness the way Link does, without a sandbox: settings file, LNK_PORT, `start`."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import time
from pathlib import Path

from link_plugin import harness, wire
from link_plugin.calls import PluginProgram
from link_plugin.channel import EndpointRef
from link_plugin.contract import CONTRACT_VERSION, Kind
from link_plugin.harness import AgentFolders, AgentRef, HarnessSettings, ModelRef
from link_plugin.layout import AgentFolder


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


PORTS_FROM = 24000
"""Test ports start here: above the ports Link gives agents (18800, blocks from 20000 up) and below
the kernel's ephemeral range, where an outgoing connection could take the port first."""

ENV_TEST_PORTS = "LNK_TEST_PORTS"
"""`FIRST-LAST`: the stretch of test ports this run may use. A runner that runs several packages' tests
at once (scripts/test.py) gives each a stretch of its own, so two packages never hand out one port."""


def _ephemeral_start() -> int:
    """The first port the kernel picks for outgoing connections (32768 on Linux unless set)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def port_stretch() -> range:
    """This process's own stretch of test ports: LNK_TEST_PORTS (else from PORTS_FROM up to the
    ephemeral range), split evenly between pytest-xdist's workers, so no two workers share a port."""
    value = os.environ.get(ENV_TEST_PORTS, "").strip()
    if value:
        first, _, last = value.partition("-")
        stretch = range(int(first), int(last) + 1)
    else:
        stretch = range(PORTS_FROM, max(_ephemeral_start(), PORTS_FROM + 1000))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    share = len(stretch) // workers
    start = stretch.start + int(worker or 0) * share
    return range(start, start + share)


_next_port: int | None = None
"""Where the next block is looked for: blocks are handed out in turn through the stretch."""


def free_block(count: int) -> int:
    """The first of `count` consecutive free loopback ports from this process's stretch
    (`port_stretch`), outside the kernel's ephemeral range: there a client's connection could take the
    port before the harness binds it, or a probe of the still-empty port could connect to itself
    (TCP's simultaneous open) and look like a listener.

    Blocks are handed out in turn, going round the stretch: a block handed out a moment ago, which
    nothing listens on yet, is not handed out again before the whole stretch has been."""
    global _next_port
    stretch = port_stretch()
    if _next_port is None or _next_port not in stretch:
        # Where it starts is drawn: two runs outside a runner that splits the ports rarely meet.
        _next_port = random.randrange(stretch.start, stretch.stop)
    for _ in range(len(stretch)):
        first = _next_port if _next_port + count <= stretch.stop else stretch.start
        if all(port_free(first + i) for i in range(count)):
            _next_port = first + count
            return first
        _next_port = first + 1
    raise RuntimeError(f"no {count} consecutive free ports from {stretch.start} to {stretch.stop - 1}")


def wait_for_port(port: int, timeout: float, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the harness exited with {process.returncode} before it listened")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as probe:
                # A probe that connected to itself found no listener, only its own port.
                if probe.getsockname() != probe.getpeername():
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"nothing listened on port {port} within {timeout:.0f} s")


def agent_settings(
    folder: AgentFolder,
    harness_name: str,
    model: ModelRef,
    ports: list[int],
    *,
    agent: AgentRef,
    endpoint_key: str | None = None,
    tools: dict[str, str] | None = None,
) -> HarnessSettings:
    """The settings Link hands a harness's adapter (`LNK_SETTINGS`) for an agent whose folder is
    `folder`, its harness's home `Harnesses/<harness_name>` in it."""
    return HarnessSettings(
        contract=CONTRACT_VERSION,
        agent=agent,
        model=model,
        folders=AgentFolders(
            agent=str(folder.root),
            home=str(folder.home),
            chats=str(folder.chats),
            harness_home=str(folder.harness_home(harness_name)),
        ),
        ports=ports,
        endpoint_key=endpoint_key,
        tools=tools or {},
    )


class RunningHarness:
    """One agent's harness, started from its adapter's `start` answer."""

    def __init__(
        self,
        executable: str,
        root: Path,
        *,
        model_url: str,
        tools: dict[str, str],
        agent: AgentRef | None = None,
        start_timeout: float = 30.0,
    ) -> None:
        self.program = PluginProgram(executable)
        self.agent = agent or AgentRef(name="main", id="kitagent0001", owner="kit@conformance")
        self.key = wire.new_endpoint_key()
        self.folder = AgentFolder(root / "agents" / self.agent.name)
        self.folder.create()
        self.harness_home = self.folder.harness_home(executable.removeprefix("lnk-"))
        self.harness_home.mkdir(parents=True, exist_ok=True)
        self.ports = self.program.ask_as(harness.Ports, Kind.HARNESS, "ports")
        self.first_port = free_block(self.ports.count)
        self.settings = agent_settings(
            self.folder,
            executable.removeprefix("lnk-"),
            ModelRef(name="stand-in", provider="openai", url=model_url),
            list(range(self.first_port, self.first_port + self.ports.count)),
            agent=self.agent,
            endpoint_key=self.key,
            tools=tools,
        )
        self.settings_file = self.harness_home / ".lnk-settings.json"
        self.settings_file.write_text(self.settings.model_dump_json(indent=2))
        self.env = {
            harness.ENV_PORT: str(self.first_port),
            harness.ENV_SETTINGS: str(self.settings_file),
        }
        self.start_timeout = start_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.log = root / f"{executable}.log"
        self._described: dict[str, object] = {"ports": self.ports}

    def ask(self, name: str, args: tuple[str, ...] = ()) -> object:
        """The adapter's answer. Those `describe` gives at once (harness.DESCRIBED) depend only on the
        settings, the same for the whole run: each is asked once, not at every check that reads it."""
        if name not in harness.DESCRIBED or args:
            return self.program.ask(Kind.HARNESS, name, args, env=self.env)
        if name not in self._described:
            self._described[name] = self.program.ask(Kind.HARNESS, name, args, env=self.env)
        return self._described[name]

    @property
    def endpoint(self) -> harness.Endpoint | None:
        answer = self.ask("endpoint")
        return answer if isinstance(answer, harness.Endpoint) else None

    def endpoint_ref(self) -> EndpointRef:
        endpoint = self.endpoint
        assert endpoint is not None, "the harness answers no endpoint"
        return EndpointRef(url=endpoint.url, key=self.key, proof=endpoint.proof, agent=endpoint.agent)

    def start(self) -> RunningHarness:
        start = self.program.ask_as(harness.Start, Kind.HARNESS, "start", env=self.env)
        env = {**os.environ, **self.env, **start.env}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                start.argv, env=env, cwd=start.cwd or self.harness_home, stdout=log, stderr=log
            )
        endpoint = self.endpoint
        port = int(endpoint.url.split(":")[2].split("/")[0]) if endpoint else self.first_port
        wait_for_port(port, self.start_timeout, self.process)
        return self

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""
