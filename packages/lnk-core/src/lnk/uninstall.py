"""`lnk uninstall [--agents]`: take lnk off this machine, saying first exactly what goes.

What goes: every agent's services (stopped, their systemd units removed), Link's settings folder
(machine.toml, every agent's settings, keys and grants, the harnesses' grants, the tools), and
the plugins lnk installed into its own environment. With `--agents`, the agents' folders too:
their files, conversations, harnesses' homes and memory's index, and the files of agents that
moved away or were deleted, kept until now. lnk itself is the installer's to remove
(`pipx uninstall lnk`), since a program can't take away the environment it runs from.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import typer

from link_plugin.errors import LinkError
from link_plugin.layout import Layout
from lnk.agents import Agent, all_agents
from lnk.install import PLUGINS, pip

Say = Callable[[str], None]


@dataclass
class Plan:
    agents: list[Agent]
    units: list[Path]
    settings: Path | None
    plugins: list[str] = field(default_factory=list)
    """Each `name version` lnk's environment holds of Link's plugins."""
    folders: Path | None = None
    """The agents' folders, with --agents."""

    def lines(self) -> list[str]:
        said = [f"the services of {a.name} ({a.id}), stopped" for a in self.agents]
        said += [f"the service unit {unit}" for unit in self.units]
        if self.settings is not None:
            said.append(f"Link's settings, every agent's keys and grants: {self.settings}")
        said += [f"the plugin {plugin}" for plugin in self.plugins]
        if self.folders is not None:
            said.append(f"the agents' folders, their files, conversations and memory's index: {self.folders}")
        return said


def _in_lnks_environment(name: str) -> str | None:
    """`name version` when the distribution is installed in lnk's own environment (not one it sees)."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    where = Path(str(dist.locate_file(""))).resolve()
    return f"{name} {dist.version}" if where.is_relative_to(Path(sys.prefix).resolve()) else None


def plan(layout: Layout, agents: bool) -> Plan:
    from lnk.services import unit_folder, unit_name

    found = all_agents(layout)
    units = [unit_folder() / unit_name(a, part) for a in found for part in ("harness", "bridges")]
    plugins = [p for p in (_in_lnks_environment(n) for n in sorted(set(PLUGINS.values()))) if p]
    return Plan(
        agents=found,
        units=[u for u in units if u.exists()],
        settings=layout.config if layout.config.exists() else None,
        plugins=plugins,
        folders=layout.agents if agents and layout.agents.exists() else None,
    )


def carry_out(done: Plan, say: Say) -> None:
    from lnk.services import stop_services

    for agent in done.agents:
        stop_services(agent)  # removes its units too
    for unit in done.units:
        unit.unlink(missing_ok=True)
    if done.plugins:
        names = [p.split(" ")[0] for p in done.plugins]
        removed = pip("uninstall", "--yes", *names)
        if removed.returncode != 0:
            raise LinkError(f"pip could not remove {', '.join(names)}: {removed.stderr.strip()}")
    if done.settings is not None:
        shutil.rmtree(done.settings)
    if done.folders is not None:
        shutil.rmtree(done.folders)
    say("lnk's services, settings and plugins are gone" + (", and the agents' folders." if done.folders else "."))


def uninstall_command(
    agents: bool = typer.Option(False, "--agents", help="The agents' folders too: files, conversations, memory."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Don't ask: go."),
) -> None:
    """Remove lnk's services, settings and plugins from this machine (with --agents, its agents too)."""
    from lnk.commands.common import confirm, layout, say

    done = plan(layout(), agents)
    lines = done.lines()
    if not lines:
        say("Nothing of lnk's is on this machine.")
        return
    say("This removes:")
    for line in lines:
        say(f"  - {line}")
    if not agents and layout().agents.exists():
        say(f"The agents' folders stay in {layout().agents} (--agents removes them).")
    confirm("Remove all of it?", yes, "Uninstalling")
    carry_out(done, say)
    say("lnk itself stays where you installed it: pipx uninstall lnk removes it.")
