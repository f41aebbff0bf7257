"""The plugins lnk finds (`lnk plugins` lists them), and `require`, how lnk gets one it needs."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping

from link_plugin.calls import PluginProgram
from link_plugin.contract import Contract, Kind
from link_plugin.discovery import Found, discover
from link_plugin.errors import LinkError
from link_plugin.layout import Layout
from lnk import kept
from lnk.install import PLUGINS, ensure_plugin, find_plugin, plugin_path
from lnk.known import CHANNELS, KNOWN, MEMORIES

LINKS_OWN = frozenset({*KNOWN.values(), *MEMORIES.values(), *CHANNELS.values(), *PLUGINS.values()})
"""The executables of Link's own plugins, of every kind."""


def contract_of(path: str, env: Mapping[str, str] | None = None) -> Contract:
    """What the plugin at `path` answered to `contract` in this release: asked once, then kept
    (`lnk.kept`) until the plugin is upgraded or reinstalled. A plugin that can't answer is asked
    again next time, so one that was fixed is found at once."""
    return kept.answer(Layout.from_env(), path, "contract", Contract, PluginProgram(path, env=env).contract)


def found_plugins(leave: Collection[str] = ()) -> list[Found]:
    """Every lnk-* plugin lnk can run: on PATH, or installed into lnk's own environment, each
    asked its `contract` once per release; those in `leave` left out, unasked."""
    env = {**os.environ, "PATH": plugin_path()}
    return discover(env, lambda path: contract_of(str(path), env), leave)


def find(executable: str) -> str | None:
    """A plugin's path, on PATH or in lnk's own environment; None when it isn't installed."""
    found = find_plugin(executable)
    return str(found) if found else None


def require(executable: str) -> str:
    """The path of a plugin lnk needs: every "this plugin must be there" goes through here.
    One of Link's own that isn't installed is installed on first use from Link's signed release."""
    return str(ensure_plugin(executable))


def known(kind: Kind, own: Mapping[str, str]) -> str:
    """Link's own names of a kind, and the others found on PATH (Link's own plugins of every kind
    aren't asked: their kinds are Link's to know)."""
    others = sorted(f.executable.removeprefix("lnk-") for f in found_plugins(leave=LINKS_OWN) if f.kind == kind)
    return ", ".join(own) + (f"; on PATH: {', '.join(others)}" if others else "")


_WHAT = {Kind.HARNESS: "harness", Kind.MEMORY: "memory engine", Kind.CHANNEL: "channel"}


def plugin_for(kind: Kind, name: str, own: Mapping[str, str]) -> str:
    """The executable serving `name`: Link's own (installed on first use), or an lnk-<name> found,
    which must be of the kind asked; an unknown name is refused, naming the known ones."""
    executable = own.get(name, f"lnk-{name}")
    if name in own:
        return require(executable)
    path = find(executable)
    if path is None:
        raise LinkError(f"There is no {_WHAT[kind]} {name!r} (known: {known(kind, own)}).")
    found = contract_of(path).kind
    if found != kind:
        raise LinkError(f"{executable} is a {found.value} plugin, not a {_WHAT[kind]}.")
    return path
