"""Every contract's commands, by kind: the registry the caller, the kit, the spec and the schemas read.

Models only: importing it runs nothing and loads no client. `calls.PluginProgram` asks the
commands listed here; `schemas` writes one JSON Schema per answer.
"""

from __future__ import annotations

from link_plugin import channel, harness, memory
from link_plugin.contract import CONTRACT_COMMAND, Command, Kind

TABLES: dict[Kind, tuple[Command, ...]] = {
    Kind.HARNESS: harness.COMMANDS,
    Kind.MEMORY: memory.COMMANDS,
    Kind.CHANNEL: channel.COMMANDS,
}

ACTS = frozenset({"install", "configure", "link", "disconnect", "connect", "start", "command"})
"""Commands whose failure is an error, never a default."""


def command_of(kind: Kind, name: str) -> Command:
    for command in TABLES.get(kind, (CONTRACT_COMMAND,)):
        if command.name == name:
            return command
    known = ", ".join(c.name for c in TABLES.get(kind, ()))
    raise KeyError(f"the {kind.value} contract has no command {name!r} (it has: {known})")
