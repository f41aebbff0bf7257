"""This machine's settings (machine.toml): its ID, name and the owner of agents nobody signed in for."""

from __future__ import annotations

import getpass
import socket

from link_plugin.files import load_toml, save_toml
from link_plugin.layout import Layout
from link_plugin.settings import MachineSettings, new_id


def owner_here(name: str) -> str:
    """`<user>@<machine>`: who owns an agent before anyone signs in."""
    return f"{getpass.getuser()}@{name}"


def load_machine(layout: Layout) -> MachineSettings:
    """machine.toml, made on first use; a file holding only some keys gets the rest added."""
    path = layout.machine
    machine = load_toml(path, MachineSettings) if path.exists() else MachineSettings()
    if machine.id and machine.name and machine.owner:
        return machine
    name = machine.name or socket.gethostname().split(".")[0] or "machine"
    machine = machine.model_copy(
        update={"id": machine.id or new_id(), "name": name, "owner": machine.owner or owner_here(name)}
    )
    save_toml(path, machine)
    return machine
