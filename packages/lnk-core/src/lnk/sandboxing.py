"""Everything lnk asks of lnk-sandbox, through its executable and link_plugin.sandbox.

lnk-sandbox reads the grants itself from Link's settings folder; lnk hands it what to run (a
SandboxRequest in a file) and asks it what a harness needs, in the owner's terminal.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from link_plugin.answers import parse_answer
from link_plugin.calls import PluginProgram
from link_plugin.errors import ExitCode, LinkError
from link_plugin.files import write_atomic
from link_plugin.harness import Needs
from link_plugin.sandbox import Check, Decision, Grants, Permissions, SandboxRequest
from lnk.agents import Agent
from lnk.plugins import require

SANDBOX = "lnk-sandbox"

M = TypeVar("M", bound=BaseModel)


def program() -> PluginProgram:
    return PluginProgram(require(SANDBOX), timeout=60.0)


def _failed(args: Sequence[str], code: int, stderr: str) -> LinkError:
    tail = "\n".join(stderr.strip().splitlines()[-5:])
    return LinkError(f"lnk-sandbox {' '.join(args)} failed (exit {code}).", tail or None)


def _answer(model: type[M], args: list[str], *, interactive: bool = False) -> M:
    asked = program().run(args[0], args[1:], interactive=interactive, timeout=None if interactive else 60.0)
    if asked.code != ExitCode.ANSWERED:
        raise _failed(args, asked.code, asked.stderr)
    return parse_answer(model, asked.stdout, source=f"lnk-sandbox {args[0]}")


def program_reads(argv: Sequence[str]) -> list[str]:
    """What a sandbox running a plugin's program reads of it: the folders of the files its command
    names (its program, its script), and the Python lnk runs on with what it imports from (lnk's
    own environment, where every plugin lnk installed lives). Code only: never a key or a setting."""
    named = {str(Path(arg).parent) for arg in argv if Path(arg).is_absolute() and Path(arg).is_file()}
    here = os.getcwd()
    imports = {p for p in sys.path if p and p != here and Path(p).is_absolute() and Path(p).is_dir()}
    return sorted(named | imports | {sys.prefix, sys.base_prefix})


def write_request(agent: Agent, request: SandboxRequest, label: str) -> Path:
    """The request file `run --request` reads, in the agent's run folder (0600)."""
    agent.run.create()
    path = agent.run.requests / f"{label}.json"
    path.parent.mkdir(mode=0o700, exist_ok=True)
    write_atomic(path, request.model_dump_json(indent=2))
    return path


def run_argv(request_file: Path) -> list[str]:
    return [require(SANDBOX), "run", "--request", str(request_file)]


def ask_needs(agent: Agent, harness: str, needs: Needs, *, yes: bool, allow_unsandboxed: bool) -> Decision:
    """Ask the owner, in this terminal, for what the harness needs beyond what was answered before."""
    agent.run.create()
    needs_file = agent.run.root / f"needs-{secrets.token_hex(4)}.json"
    write_atomic(needs_file, needs.model_dump_json())
    args = ["needs", "--agent", agent.name, "--harness", harness, "--needs", str(needs_file)]
    args += ["--yes"] * yes + ["--allow-unsandboxed"] * allow_unsandboxed
    try:
        return _answer(Decision, args, interactive=True)
    finally:
        needs_file.unlink(missing_ok=True)


def grants(agent: Agent, harness: str) -> Grants:
    return _answer(Grants, ["grants", "--agent", agent.name, "--harness", harness, "--json"])


def check(agent: Agent, harness: str) -> Check:
    return _answer(Check, ["check", "--agent", agent.name, "--harness", harness, "--json"])


def permissions() -> Permissions:
    return _answer(Permissions, ["permissions", "--json"])


def answer_in_sandbox(agent: Agent, request: SandboxRequest, model: type[M], label: str) -> M | None:
    """Run an adapter's command in the sandbox and read its answer; None when it doesn't answer it."""
    file = write_request(agent, request, label)
    asked = program().run("run", ["--request", str(file)], timeout=1800.0)
    if asked.code in (ExitCode.NOT_ANSWERED, ExitCode.USAGE):
        return None
    if asked.code != ExitCode.ANSWERED:
        raise _failed([*request.argv[-1:], "in its sandbox"], asked.code, asked.stderr)
    return parse_answer(model, asked.stdout, source=" ".join(Path(a).name for a in request.argv))


def change(args: list[str]) -> None:
    """allow / deny / harness allow|deny|repermit: the sandbox says what changed, on the terminal."""
    asked = program().run(args[0], args[1:], interactive=True, timeout=None)
    if asked.code != ExitCode.ANSWERED:
        raise LinkError(f"lnk-sandbox {' '.join(args)} refused (exit {asked.code}).")
    if asked.stdout.strip():
        print(asked.stdout.strip())
