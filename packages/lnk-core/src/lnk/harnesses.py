"""A harness, driven only through its adapter's executable and the harness contract.

Before a start Link asks the adapter's `describe` once per release (`lnk.kept`): each
question it answers there (ports, needs, channels, folders, endpoint, hosts) runs no process, and
a command it doesn't answer takes its default unasked. The others are asked of their commands.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from link_plugin.answers import Answer, parse_answer
from link_plugin.calls import PluginProgram
from link_plugin.contract import Kind
from link_plugin.errors import ExitCode, LinkError, PluginFailed
from link_plugin.harness import (
    ENV_PORT,
    ENV_SETTINGS,
    Channels,
    Description,
    Done,
    Endpoint,
    Folders,
    Health,
    Hosts,
    Needs,
    Ports,
    Start,
    State,
    ask_each,
)
from link_plugin.layout import Layout
from lnk import kept
from lnk.known import DEFAULT_HARNESS, KNOWN, reserved
from lnk.plugins import plugin_for

if TYPE_CHECKING:
    from lnk.agents import Agent

A = TypeVar("A", bound=Answer)

PASSED_ON = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "USER", "LOGNAME")
"""The only variables of lnk's own environment a harness or its adapter sees: never a key."""


def clean_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {name: os.environ[name] for name in PASSED_ON if name in os.environ}
    env.setdefault("PATH", os.defpath)
    return {**env, "HOME": str(home), **(extra or {})}


def check_harness_name(name: str) -> None:
    if reserved(name):
        raise LinkError(
            f"{name!r} is the name of one of Link's programs, not a harness.",
            f"Name the harness: {', '.join(KNOWN)} (its program lnk-<name> is found on PATH).",
        )


@dataclass(frozen=True)
class Harness:
    name: str
    path: str
    home: Path
    """The harness's HOME: ~/Link/Agents/<agent>/Harnesses/<name>."""

    @classmethod
    def find(cls, name: str, home: Path) -> Harness:
        """The harness by name: Link's own are installed on first use; another plugs in from PATH."""
        check_harness_name(name)
        return cls(name=name, path=plugin_for(Kind.HARNESS, name, KNOWN), home=home)

    @property
    def program(self) -> PluginProgram:
        return PluginProgram(self.path, env=clean_env(self.home))

    def env(self, port: int, settings: Path | None = None) -> dict[str, str]:
        env = {ENV_PORT: str(port)}
        if settings is not None:
            env[ENV_SETTINGS] = str(settings)
        return env

    def description(self, layout: Layout, port: int) -> Description:
        """What the adapter answers before a start, kept per its release and `port`. One that fails
        this time is asked each question on its own, and `describe` again at the next start."""
        try:
            return kept.answer(layout, self.path, f"describe-{port}", Description, lambda: self._describe(port))
        except LinkError:
            return ask_each()

    def _describe(self, port: int) -> Description:
        """`describe`, or what an adapter that doesn't answer it (an older one) stands for; a failure
        raises, so it isn't kept."""
        asked = self.program.run("describe", env=self.env(port))
        if asked.code in (ExitCode.NOT_ANSWERED, ExitCode.USAGE):
            return ask_each()
        if asked.code != ExitCode.ANSWERED:
            raise PluginFailed(f"lnk-{self.name} describe failed (exit {asked.code}).")
        return parse_answer(Description, asked.stdout, source=f"lnk-{self.name} describe")

    def _answer(self, model: type[A], name: str, env: Mapping[str, str], description: Description | None) -> A:
        known = description.known(name) if description is not None else None
        return known if isinstance(known, model) else self.program.ask_as(model, Kind.HARNESS, name, env=env)

    def ports(self, port: int, description: Description | None = None) -> Ports:
        return self._answer(Ports, "ports", self.env(port), description)

    def needs(self, env: Mapping[str, str], description: Description | None = None) -> Needs:
        return self._answer(Needs, "needs", env, description)

    def channels(self, env: Mapping[str, str], description: Description | None = None) -> list[str]:
        return self._answer(Channels, "channels", env, description).channels

    def endpoint(self, port: int, description: Description | None = None) -> Endpoint | None:
        known = description.known("endpoint") if description is not None else None
        answer = known or self.program.ask(Kind.HARNESS, "endpoint", env=self.env(port))
        return answer if isinstance(answer, Endpoint) else None

    def folders(self, port: int, description: Description | None = None) -> list[str]:
        return self._answer(Folders, "folders", self.env(port), description).writes

    def hosts(self, env: Mapping[str, str], description: Description | None = None) -> list[str]:
        return self._answer(Hosts, "hosts", env, description).hosts

    def state(self, port: int, description: Description | None = None) -> list[str]:
        """The paths of its home that are its state on a move ("." for all of it)."""
        return self._answer(State, "state", self.env(port), description).paths

    def answers(self, command: str, description: Description | None) -> bool:
        """Whether the adapter answers `command` (an older one, not describing itself, may)."""
        return description is None or command in description.answers

    def start(self, env: Mapping[str, str], description: Description | None = None) -> Start:
        return self._answer(Start, "start", env, description)

    def health(self, env: Mapping[str, str]) -> Health:
        return self.program.ask_as(Health, Kind.HARNESS, "health", env=env, timeout=10.0)

    def step(self, command: str, env: Mapping[str, str]) -> Done:
        """install or configure, run here: without a sandbox only."""
        done = self.program.ask_as(Done, Kind.HARNESS, command, env=env, timeout=600.0)
        if not done.ok:
            raise LinkError(f"lnk-{self.name} {command} failed: {done.detail or 'it gave no reason'}.")
        return done


def harness_of(agent: Agent, name: str | None = None) -> Harness:
    """The harness named, or the agent's own (Link Harness when it has none yet)."""
    chosen = name or agent.settings.harness or DEFAULT_HARNESS
    return Harness.find(chosen, agent.folder.harness_home(chosen))
