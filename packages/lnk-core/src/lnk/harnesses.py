"""A harness, driven only through its adapter's executable and the harness contract."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from link_plugin.calls import PluginProgram
from link_plugin.contract import Kind
from link_plugin.errors import LinkError
from link_plugin.harness import (
    ENV_PORT,
    ENV_SETTINGS,
    Channels,
    Done,
    Endpoint,
    Folders,
    Health,
    Needs,
    Ports,
    Start,
)
from lnk.known import KNOWN, reserved
from lnk.plugins import plugin_for

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

    def ports(self, port: int) -> Ports:
        return self.program.ask_as(Ports, Kind.HARNESS, "ports", env=self.env(port))

    def needs(self, env: Mapping[str, str]) -> Needs:
        return self.program.ask_as(Needs, Kind.HARNESS, "needs", env=env)

    def channels(self, env: Mapping[str, str]) -> list[str]:
        return self.program.ask_as(Channels, Kind.HARNESS, "channels", env=env).channels

    def endpoint(self, port: int) -> Endpoint | None:
        answer = self.program.ask(Kind.HARNESS, "endpoint", env=self.env(port))
        return answer if isinstance(answer, Endpoint) else None

    def folders(self, port: int) -> list[str]:
        return self.program.ask_as(Folders, Kind.HARNESS, "folders", env=self.env(port)).writes

    def start(self, env: Mapping[str, str]) -> Start:
        return self.program.ask_as(Start, Kind.HARNESS, "start", env=env)

    def health(self, env: Mapping[str, str]) -> Health:
        return self.program.ask_as(Health, Kind.HARNESS, "health", env=env, timeout=10.0)

    def step(self, command: str, env: Mapping[str, str]) -> Done:
        """install or configure, run here: without a sandbox only."""
        done = self.program.ask_as(Done, Kind.HARNESS, command, env=env, timeout=600.0)
        if not done.ok:
            raise LinkError(f"lnk-{self.name} {command} failed: {done.detail or 'it gave no reason'}.")
        return done
