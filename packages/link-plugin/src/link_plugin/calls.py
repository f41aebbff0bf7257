"""Asking a plugin executable a contract command, the way the core and the kit do.

A command the plugin doesn't answer (exit 3, or an older plugin that doesn't know it) takes the
default the contract states for it. A question (needs, ports, ...) takes its default on any
failure, since an outside adapter releases on its own schedule; a step that acts (install,
configure, link, disconnect) that fails is an error.

The commands themselves are listed in `link_plugin.commands` (models only); `TABLES`, `ACTS`
and `command_of` are offered here too, where they were first.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from link_plugin.answers import Answer, parse_answer
from link_plugin.commands import ACTS as ACTS
from link_plugin.commands import TABLES as TABLES
from link_plugin.commands import command_of as command_of
from link_plugin.contract import Contract, Kind
from link_plugin.errors import ContractError, ExitCode, PluginFailed

A = TypeVar("A", bound=Answer)


@dataclass
class Asked:
    """What running one command gave, before it is read as an answer."""

    code: int
    stdout: str
    stderr: str


def _tail(text: str, lines: int = 5) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


@dataclass
class PluginProgram:
    """A plugin executable on PATH (or at a path), asked commands one process at a time."""

    executable: str
    env: Mapping[str, str] | None = None
    timeout: float = 60.0

    @property
    def path(self) -> str | None:
        return shutil.which(self.executable, path=(self.env or os.environ).get("PATH"))

    def run(
        self,
        name: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        interactive: bool = False,
        timeout: float | None = None,
    ) -> Asked:
        """Run a command. Interactive ones keep the terminal for stdin and stderr."""
        merged = {**(self.env or os.environ), **(env or {})}
        path = self.path
        if path is None:
            raise PluginFailed(
                f"{self.executable} is not on PATH.",
                "Install it, or let lnk install it on first use from its release index.",
            )
        try:
            done = subprocess.run(
                [path, name, *args],
                env=merged,
                input=stdin,
                stdin=None if (interactive or stdin is not None) else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=None if interactive else subprocess.PIPE,
                text=True,
                timeout=None if interactive else (timeout or self.timeout),
            )
        except subprocess.TimeoutExpired as exc:
            raise PluginFailed(f"{self.executable} {name} gave no answer in {exc.timeout:.0f} s.") from exc
        except OSError as exc:
            raise PluginFailed(f"{self.executable} could not be run: {exc.strerror}.") from exc
        return Asked(done.returncode, done.stdout or "", done.stderr or "")

    def contract(self) -> Contract:
        asked = self.run("contract", timeout=min(self.timeout, 20.0))
        if asked.code != ExitCode.ANSWERED:
            raise PluginFailed(f"{self.executable} contract failed (exit {asked.code}).", _tail(asked.stderr) or None)
        return parse_answer(Contract, asked.stdout, source=f"{self.executable} contract")

    def ask(
        self,
        kind: Kind,
        name: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
        interactive: bool = False,
        timeout: float | None = None,
    ) -> Answer:
        """Ask one command and read its answer, or its stated default."""
        command = command_of(kind, name)
        if command.answer is None:
            raise ValueError(f"`{name}` runs rather than answers; use run()")
        asked = self.run(name, args, env=env, stdin=stdin, interactive=interactive, timeout=timeout)
        source = f"{self.executable} {name}"
        if asked.code == ExitCode.ANSWERED and asked.stdout.strip():
            return parse_answer(command.answer, asked.stdout, source=source)
        fell_back = asked.code in (ExitCode.NOT_ANSWERED, ExitCode.USAGE) or name not in ACTS
        if command.default is not None and fell_back:
            return command.default()
        if asked.code == ExitCode.ANSWERED:
            raise ContractError(f"{source} ended well but printed no answer.")
        raise PluginFailed(f"{source} failed (exit {asked.code}).", _error_of(asked) or _tail(asked.stderr) or None)

    def ask_as(self, model: type[A], kind: Kind, name: str, args: Sequence[str] = (), **kw: object) -> A:
        answer = self.ask(kind, name, args, **kw)  # type: ignore[arg-type]
        if not isinstance(answer, model):
            raise ContractError(f"{self.executable} {name}: expected {model.__name__}")
        return answer


def _error_of(asked: Asked) -> str | None:
    """The message of a {"error": ...} a failing plugin printed, if it did."""
    try:
        data = json.loads(asked.stdout)
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        hint = data.get("hint")
        return f"{data['error']}\n{hint}" if isinstance(hint, str) and hint else data["error"]
    return None
