"""A machine of the suite's own: a home in a temporary folder, `lnk` on its PATH as pipx would put it,
and every lnk command run as a person runs it, in an environment that names nothing of the tests.

Link's two roots are where they are on a real machine, under that home (`~/.config/lnk`,
`~/Link/Agents`), named too by LNK_CONFIG_DIR and LNK_AGENTS_DIR so nothing reaches a real home.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import tomllib
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

from lnk_e2e import processes
from lnk_e2e.processes import Process
from lnk_e2e.release import Release
from lnk_e2e.waiting import wait_for

KEPT = ("LANG", "LC_ALL", "LC_CTYPE", "TZ")
"""What of the tests' environment a person's shell has too; the rest (the dev environment's PATH,
its virtual environment) stays out. pip's own settings (PIP_*) are kept: lnk installs with pip."""
BLOCKS_FROM = 20000
"""Where Link gives agents their blocks of ports, on a person's machine as here."""
WORKER_BLOCKS = 1000
"""How far apart two test processes' machines start their blocks (below the packages' test ports,
from 24000): their agents, each taking the lowest free block at the same moment, never meet."""
UNCHANGED = 5.0
"""Seconds `status_when` lets pass without asking `status` again while the run folder stays as it was."""


def blocks_from() -> int:
    """Where this test process's agents take their ports: 20000 in the first (or only) one,
    `WORKER_BLOCKS` further for each other pytest-xdist worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    return BLOCKS_FROM + int(worker or 0) * WORKER_BLOCKS


class Machine:
    def __init__(self, root: Path, lnk: Path, release: Release, model: str | None, telegram: str | None) -> None:
        self.root = root
        self.home = root / "home"
        self.config = self.home / ".config" / "lnk"
        self.agents = self.home / "Link" / "Agents"
        bin_folder = root / "bin"
        bin_folder.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(parents=True, exist_ok=True)
        (bin_folder / "lnk").symlink_to(lnk)
        self.env = {
            **{name: value for name, value in os.environ.items() if name in KEPT or name.startswith("PIP_")},
            "PATH": f"{bin_folder}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "USER": os.environ.get("USER", "root"),
            "LNK_CONFIG_DIR": str(self.config),
            "LNK_AGENTS_DIR": str(self.agents),
            "LNK_SERVICES": "detached",
            # Plugins install on first use from the release, checked with its throwaway key.
            "LNK_INDEX": str(release.folder),
            "LNK_DEV_PUBLIC_KEY": str(release.public_key),
        }
        # The proxy sends OpenAI's traffic to the stand-in; the bridge talks to the fake Bot API.
        if model is not None:
            self.env["LNK_UPSTREAM_OPENAI"] = model
        if telegram is not None:
            self.env["LNK_TELEGRAM_API"] = telegram
        self.ports_from = blocks_from()
        """Where this machine's agents take their ports: Link's own 20000, or (for the second worker
        of a pytest-xdist run) a stretch of its own, named by LNK_PORTS_FROM."""
        if self.ports_from != BLOCKS_FROM:
            self.env["LNK_PORTS_FROM"] = str(self.ports_from)
        self.prefix: list[str] = []
        """What every command runs under (e.g. entering a network namespace of the test's own)."""

    # --- running lnk ---------------------------------------------------------------------------

    def run(
        self, *argv: str, input: str | None = None, ok: bool = True, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        """A command run in this machine's terminal (its PATH finds `lnk`)."""
        done = subprocess.run(
            [*self.prefix, *argv],
            input=input,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.home,
            timeout=timeout,
        )
        if ok and done.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    def lnk(
        self, *args: str, input: str | None = None, ok: bool = True, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        return self.run("lnk", *args, input=input, ok=ok, timeout=timeout)

    def spawn(self, *args: str) -> subprocess.Popen[str]:
        """An lnk command left running (one that waits for someone, as connect does for the code); what
        it says on stdout and stderr comes on its stdout, line by line."""
        return subprocess.Popen(
            [*self.prefix, "lnk", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
            cwd=self.home,
        )

    def status(self, agent: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.lnk("agent", "status", agent, "--json").stdout)
        return found

    def status_when(
        self, agent: str, holds: Callable[[dict[str, Any]], bool], timeout: float, what: str
    ) -> dict[str, Any]:
        """`lnk agent status AGENT --json` once `holds` is true of it, as a person would run it again
        until it is. A run of `status` costs a second of CPU on a busy machine, and what it says of
        the running services (the harness's and each bridge's state) is what the supervisor writes
        in the agent's run folder: so it is asked again as soon as a file there changed, and every
        `UNCHANGED` seconds all the same (a process may end without writing), not every 50 ms."""
        run = self.config / "agents" / ".run" / self.settings(agent)["id"]
        seen: tuple[tuple[str, int, int, int], ...] | None = None
        asked = 0.0

        def files() -> tuple[tuple[str, int, int, int], ...]:
            found = []
            for path in sorted(run.glob("*.json")):  # spec.json and each part's state-*.json
                with suppress(FileNotFoundError):  # replaced as we look: the next look sees it
                    stat = path.stat()
                    found.append((path.name, stat.st_ino, stat.st_mtime_ns, stat.st_size))
            return tuple(found)

        def answer() -> dict[str, Any] | None:
            nonlocal seen, asked
            now = files()
            if now == seen and time.monotonic() - asked < UNCHANGED:
                return None
            seen, asked = now, time.monotonic()
            status = self.status(agent)
            return status if holds(status) else None

        return wait_for(answer, timeout, what)

    # --- what Link keeps -----------------------------------------------------------------------

    def settings_file(self, agent: str) -> Path:
        return self.config / "agents" / agent / "settings.toml"

    def settings(self, agent: str) -> dict[str, Any]:
        return tomllib.loads(self.settings_file(agent).read_text())

    def folder(self, agent: str) -> Path:
        return self.agents / agent

    def logs(self, lines: int = 60) -> dict[str, str]:
        """The newest lines of every log Link keeps here (its agents', bridges', proxies'), by file."""
        found = {}
        for log in sorted(self.config.glob("agents/*/**/*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            found[str(log.relative_to(self.config))] = "\n".join(text)
        return found

    # --- what runs -----------------------------------------------------------------------------

    def processes(self) -> list[processes.Process]:
        """Every process of this machine's Link: each names its root, in its command or environment."""
        return [p for p in processes.mentioning(str(self.root)) if p.pid != os.getpid()]

    def bridge(self, channel: str) -> Process | None:
        """The process carrying `channel`'s messages (`lnk-<channel> bridge`), while one runs."""
        for process in self.processes():
            if (
                process.argv[-1:] == ["bridge"]
                and len(process.argv) > 1
                and process.argv[-2].endswith(f"lnk-{channel}")
            ):
                return process
        return None

    def close(self) -> None:
        """End whatever of this machine's Link still runs (after a failed test), each by its pid."""
        for process in self.processes():
            with suppress(ProcessLookupError, PermissionError):
                os.kill(process.pid, signal.SIGKILL)
