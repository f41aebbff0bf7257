"""Agents on this machine: a typed name, a random ID that never changes, an owner and settings.

What people see is named after the agent (its folder, its settings, its logs); what runs is keyed
by its ID (its services, its memory tool, its sockets, its run folder).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.files import load_toml, save_toml
from link_plugin.keys import KeyStore
from link_plugin.layout import AgentConfig, AgentFolder, Layout
from link_plugin.settings import AgentSettings, new_id
from lnk.known import DEFAULT_AGENT as DEFAULT_AGENT
from lnk.known import reserved
from lnk.machine import load_machine
from lnk.runfiles import RunFolder, run_folder

BLOCKS_FROM = 20000
"""Every agent but main gets its block of ports from here, unless LNK_PORTS_FROM says otherwise."""

ENV_PORTS_FROM = "LNK_PORTS_FROM"
"""Where the blocks start instead: a second Link on the same machine (a test run beside a person's
own Link, or two test runs at once) keeps its agents' ports apart from the first's."""


def blocks_from() -> int:
    """The first port of the blocks: LNK_PORTS_FROM when set, else 20000."""
    value = os.environ.get(ENV_PORTS_FROM, "").strip()
    if not value:
        return BLOCKS_FROM
    if not value.isdigit() or not 1024 <= int(value) <= 65000:
        raise LinkError(
            f"{ENV_PORTS_FROM}={value!r} is not a port to start agents' blocks from.",
            f"Set it to a number from 1024 to 65000, or unset it for {BLOCKS_FROM}.",
        )
    return int(value)


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")


def check_name(name: str) -> str:
    if not _NAME.match(name) or reserved(name):
        raise LinkError(
            f"{name!r} can't name an agent.",
            "Use up to 40 letters, digits, '-' or '_', starting with a letter or digit (and not link. or lnk-).",
        )
    return name


@dataclass(frozen=True)
class Agent:
    layout: Layout
    settings: AgentSettings

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def id(self) -> str:
        return self.settings.id

    @property
    def folder(self) -> AgentFolder:
        return self.layout.agent(self.name)

    @property
    def config(self) -> AgentConfig:
        return self.layout.agent_config(self.name)

    @property
    def port(self) -> int:
        """The first port of its block: LNK_PORT for its adapter (where it will be, before a first start)."""
        return self.settings.ports[0] if self.settings.ports else blocks_from()

    @property
    def keys(self) -> KeyStore:
        return KeyStore(self.config.keys)

    @property
    def logs(self) -> Path:
        return self.config.root / "logs"

    @property
    def run(self) -> RunFolder:
        return run_folder(self.layout, self.id)

    def save(self) -> None:
        """Written whole by rename: a crash leaves the old settings or the new, never half."""
        save_toml(self.config.settings, self.settings)

    def with_settings(self, **changes: object) -> Agent:
        settings = AgentSettings.model_validate({**self.settings.model_dump(), **changes})
        return Agent(self.layout, settings)


def known_names(layout: Layout) -> list[str]:
    return layout.agent_names()


def unknown_agent(layout: Layout, name: str) -> LinkError:
    names = known_names(layout)
    known = ", ".join(names) if names else "none yet"
    return LinkError(f"There is no agent {name!r} here (agents: {known}).", "`lnk agent start NAME` makes one.")


def load_agent(layout: Layout, name: str) -> Agent:
    path = layout.agent_config(name).settings
    if not path.is_file():
        raise unknown_agent(layout, name)
    settings = load_toml(path, AgentSettings)
    if settings.name != name:
        settings = settings.model_copy(update={"name": name})
    return Agent(layout, settings)


def create_agent(layout: Layout, name: str, **known: str | None) -> Agent:
    """A new agent: its ID, its owner from the machine, its folders, its settings. `known` gives
    settings it already has (a restored agent's ID, harness, model, memory). Not one by the name of
    an agent that moved away: it runs elsewhere."""
    from lnk.moves import refuse_moved

    check_name(name)
    refuse_moved(layout, name)
    machine = load_machine(layout)
    assert machine.owner is not None
    given = {key: value for key, value in known.items() if value is not None}
    agent = Agent(layout, AgentSettings.model_validate({"id": new_id(), **given, "name": name, "owner": machine.owner}))
    agent.folder.create()
    agent.config.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    agent.save()
    return agent


def load_or_create(layout: Layout, name: str) -> tuple[Agent, bool]:
    if layout.agent_config(name).settings.is_file():
        return load_agent(layout, name), False
    return create_agent(layout, name), True


def all_agents(layout: Layout) -> list[Agent]:
    return [load_agent(layout, name) for name in known_names(layout)]


def owners_others(agent: Agent) -> list[Agent]:
    """Every other agent of the agent's owner here, by name: they share one memory engine, and
    Link Scheduler's messages go between them."""
    others = [a for a in all_agents(agent.layout) if a.settings.owner == agent.settings.owner and a.id != agent.id]
    return sorted(others, key=lambda a: a.name)
