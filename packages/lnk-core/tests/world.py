"""A machine of its own for each test: Link's two roots in a temporary folder, a stand-in model
provider that takes only its key, ports of its own, and `lnk` run as a person would run it.

Most commands run `lnk.cli.main` in this process, inside typer's `CliRunner` isolation (its own
stdin, stdout, stderr and environment): the same code from the same entry point, without a second
of imports. A start among them is the same too: the agent's supervisor is a process of its own, in
a session of its own, as when a person starts it (it outlives the command, which only waits for
it). `lnk` runs as `python -m lnk` in a process of its own for a command that takes the process
over (a chat ends with `os._exit`, `bucket config` becomes rclone, `model serve` serves until
stopped), for `connect`, whose plugin reads the token from the descriptor lnk was given, and for
one this module doesn't know to leave it whole.

Every agent but main takes its block from `LNK_PORTS_FROM`, a free stretch of ports handed to the
world by the kit's `free_block` (each xdist worker, and each package run beside this one, hands out
its own share of the test ports), so tests running at once never reach for the same ports. main
keeps its harness's usual ports, as it does for a person: the `main_ports` fixture lets one test at
a time on the machine hold them.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

from conftest import SANDBOX_BIN
from typer.testing import CliRunner

from link_conformance import StandInProvider
from link_conformance.running import free_block
from link_plugin.harness import HarnessSettings
from link_plugin.keys import KeyStore
from link_plugin.layout import Layout
from lnk import cli
from lnk.agents import ENV_PORTS_FROM, Agent, load_agent
from lnk.plugins import find
from lnk.runstate import PartState, RunSpec, read_spec, read_state
from lnk_testing import tool_server

PYTHON = sys.executable
TOOL = [PYTHON, tool_server.__file__]

IN_PROCESS = {
    *(("agent", name) for name in ("keys", "status", "list", "logs", "stop", "delete", "permissions", "allow")),
    *(("agent", name) for name in ("deny", "approvals", "schedules", "cancel", "sent")),
    *(("agent", name) for name in ("start", "restart", "use", "memory", "disconnect")),
    *(("agent", name) for name in ("backup", "restore")),
    ("sandbox", "tool"),
    *(("bucket", name) for name in ("set", "show", "delete")),  # `bucket config` becomes rclone (exec)
}
"""Commands that leave the process they run in to its owner: run in this one (see the module's docstring)."""

PORTS = 40
"""How many ports a world's agents take their blocks from: the widest test holds three agents."""


def sandboxes() -> bool:
    """Whether bubblewrap makes a sandbox here, and lnk-sandbox is installed to drive it."""
    if shutil.which("bwrap") is None or find("lnk-sandbox") is None:
        return False
    probe = subprocess.run(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True)
    return probe.returncode == 0


def wait_until(condition: Callable[[], Any], timeout: float = 60.0, what: str = "it") -> Any:
    """The condition's first true answer. The timeout only bounds how long a failure takes to be
    told: on two cores shared with other suites, a first turn that starts tools took over 20 s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{what} didn't happen within {timeout:.0f} s")


class World:
    def __init__(self) -> None:
        # Short, so unix sockets under it stay within their 108-byte limit.
        self.root = Path(tempfile.mkdtemp(prefix="lnk-", dir="/tmp"))
        self.key = "sk-test-" + secrets.token_hex(12)
        self.provider = StandInProvider(key=self.key).start()
        self.record = self.root / "record.jsonl"
        self.ports_from = free_block(PORTS)
        self.env = {
            **os.environ,
            "HOME": str(self.root / "home"),
            "LNK_CONFIG_DIR": str(self.root / "config"),
            "LNK_AGENTS_DIR": str(self.root / "agents"),
            "LNK_SERVICES": "detached",
            "LNK_START_TIMEOUT": "30",
            ENV_PORTS_FROM: str(self.ports_from),
            "LNK_UPSTREAM_OPENAI": self.provider.origin,
            "LNK_UPSTREAM_ANTHROPIC": self.provider.origin,
            "LNK_TEST_RECORD": str(self.record),
            "TOOL_RECORD": str(self.root / "tool-calls"),
        }
        (self.root / "home").mkdir()

    # --- running lnk -------------------------------------------------------------------------

    def lnk(
        self, *args: str, input: str | None = None, ok: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        if tuple(args[:2]) in IN_PROCESS:
            done = self._in_process(list(args), input)
        else:
            done = subprocess.run(
                [PYTHON, "-m", "lnk", *args],
                input=input,
                capture_output=True,
                text=True,
                env=self.env,
                timeout=timeout,
                stdin=None if input is not None else subprocess.DEVNULL,
            )
        if ok and done.returncode != 0:
            raise AssertionError(f"lnk {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        if not ok and done.returncode == 0:
            raise AssertionError(f"lnk {' '.join(args)} should have failed:\n{done.stdout}\n{done.stderr}")
        return done

    def _in_process(self, args: list[str], input: str | None) -> subprocess.CompletedProcess[str]:
        """`lnk ARGS` through `lnk.cli.main`, as `python -m lnk` runs it, with the world's environment.
        A width of 80 as on a pipe: in this process a terminal may be on the descriptors rich asks."""
        env = {"COLUMNS": "80", **self.env}
        argv, sys.argv = sys.argv, ["lnk", *args]
        code: int | str | None = 0
        try:
            with CliRunner().isolation(input=input, env=env) as (out, err, _):
                try:
                    cli.main()
                except SystemExit as exc:
                    code = exc.code
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    said, complained = out.getvalue().decode(), err.getvalue().decode()
        finally:
            sys.argv = argv
        if isinstance(code, str):  # as the interpreter does with sys.exit("message")
            complained, code = complained + code + "\n", 1
        return subprocess.CompletedProcess(["lnk", *args], code or 0, said, complained)

    def start(self, name: str = "work", *extra: str, harness: str = "mini") -> subprocess.CompletedProcess[str]:
        """An agent with an OpenAI key, started without a sandbox with a fixture harness."""
        if "openai" not in KeyStore(self.layout.agent_config(name).keys).names():
            self.lnk("agent", "keys", "set", "openai", name, "--stdin", input=self.key)
        return self.lnk("agent", "start", name, "--harness", harness, "--no-sandbox", *extra)

    def chat(self, name: str, text: str, input: str | None = None) -> str:
        return self.lnk("agent", "chat", name, "-m", text, input=input).stdout

    def with_sandbox(self, decision: dict[str, Any] | None = None) -> Path:
        """Put the lnk-sandbox double on PATH; returns the file recording what it was asked."""
        calls = self.root / "sandbox-calls.jsonl"
        self.env["PATH"] = f"{SANDBOX_BIN}{os.pathsep}{self.env['PATH']}"
        self.env["LNK_SANDBOX_RECORD"] = str(calls)
        if decision is not None:
            self.env["LNK_SANDBOX_DECISION"] = json.dumps(decision)
        return calls

    # --- reading what lnk keeps --------------------------------------------------------------

    @property
    def layout(self) -> Layout:
        return Layout(config=self.root / "config", agents=self.root / "agents")

    def agent(self, name: str) -> Agent:
        return load_agent(self.layout, name)

    def spec(self, name: str) -> RunSpec:
        spec = read_spec(self.agent(name))
        assert spec is not None
        return spec

    def state(self, name: str, part: str = "harness") -> PartState:
        state = read_state(self.agent(name).run.state(part))
        assert state is not None
        return state

    def harness_pid(self, name: str) -> int:
        pid = self.state(name).children["harness"].pid
        assert pid is not None
        return pid

    def tool_runs(self) -> list[tuple[str, int]]:
        """Each call the fixture tool's server ran (tool_server.py), and that server's process ID."""
        path = Path(self.env["TOOL_RECORD"])
        lines = path.read_text().splitlines() if path.exists() else []
        return [(text, int(pid)) for text, _, pid in (line.rpartition(" ") for line in lines)]

    def tool_calls(self) -> list[str]:
        return [text for text, _ in self.tool_runs()]

    def harness_settings(self, name: str) -> HarnessSettings:
        return HarnessSettings.model_validate_json(Path(self.spec(name).settings_file).read_text())

    def records(self, key: str) -> list[Any]:
        if not self.record.exists():
            return []
        lines = [json.loads(line) for line in self.record.read_text().splitlines()]
        return [line[key] for line in lines if key in line]

    @staticmethod
    def calls(path: Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    # --- ending ------------------------------------------------------------------------------

    def pids(self) -> Iterator[int]:
        for state_file in (self.root / "config" / "agents" / ".run").glob("*/state-*.json"):
            with suppress(ValueError, OSError):
                state = PartState.model_validate_json(state_file.read_text())
                yield state.pid
                yield from (c.pid for c in state.children.values() if c.pid)

    def close(self) -> None:
        for pid in set(self.pids()):
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        self.provider.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def process_gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return status.rsplit(")", 1)[1].split()[0] == "Z"
