"""Where Link keeps things on disk. Both roots can be moved by environment, so tests never touch a home.

$LNK_AGENTS_DIR (~/Link/Agents)/<agent>/    the agent's folder
$LNK_CONFIG_DIR (~/.config/lnk)/            Link's settings; no sandbox ever reaches it

Each is a NamedTuple (`records.py`'s, which loads no `typing`) rather than a dataclass:
`lnk-sandbox run` reads the layout on every sandbox start, and loading `dataclasses` (with
`inspect`) and making a class with it costs such a short-lived program more than its work.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from link_plugin.records import NamedTuple

ENV_CONFIG = "LNK_CONFIG_DIR"
ENV_AGENTS = "LNK_AGENTS_DIR"

HOME_FOLDERS = ("memory", "instructions", "skills", "work")
"""Side by side in Home, never nested, so each can be read-only or writable on its own."""


class AgentFolder(NamedTuple):
    root: Path

    @property
    def home(self) -> Path:
        return self.root / "Home"

    @property
    def memory(self) -> Path:
        return self.home / "memory"

    @property
    def notes(self) -> Path:
        return self.memory / "notes.md"

    @property
    def instructions(self) -> Path:
        return self.home / "instructions"

    @property
    def chats(self) -> Path:
        return self.root / "chats"

    def memory_state(self, engine: str) -> Path:
        return self.root / "Memory" / engine

    @property
    def scheduler(self) -> Path:
        """Link Scheduler's state: what is due, kept across restarts; no harness reaches it."""
        return self.root / "Scheduler"

    def harness_home(self, harness: str) -> Path:
        return self.root / "Harnesses" / harness

    def create(self) -> None:
        for folder in (*(self.home / name for name in HOME_FOLDERS), self.chats):
            folder.mkdir(parents=True, exist_ok=True)


class AgentConfig(NamedTuple):
    """An agent's settings folder, ~/.config/lnk/agents/<agent>/."""

    root: Path

    @property
    def settings(self) -> Path:
        return self.root / "settings.toml"

    @property
    def sandbox(self) -> Path:
        return self.root / "sandbox.toml"

    @property
    def keys(self) -> Path:
        return self.root / "keys.json"

    def channel(self, channel: str) -> Path:
        return self.root / "channels" / channel


class Layout(NamedTuple):
    config: Path
    agents: Path

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Layout:
        env = os.environ if env is None else env
        home = Path(env.get("HOME") or Path.home())
        return cls(
            config=Path(env.get(ENV_CONFIG) or home / ".config" / "lnk"),
            agents=Path(env.get(ENV_AGENTS) or home / "Link" / "Agents"),
        )

    @property
    def machine(self) -> Path:
        return self.config / "machine.toml"

    def agent(self, name: str) -> AgentFolder:
        return AgentFolder(self.agents / name)

    def agent_config(self, name: str) -> AgentConfig:
        return AgentConfig(self.config / "agents" / name)

    def harness_grants(self, harness: str) -> Path:
        return self.config / "harnesses" / f"{harness}.toml"

    def net(self, agent_id: str) -> Path:
        """The proxy's sockets for an agent, keyed by its ID."""
        return self.config / "agents" / ".net" / agent_id

    def tools_socket(self, agent_id: str) -> Path:
        """Where the core's tool bridge listens for the agent's proxy to pass tool calls on."""
        return self.net(agent_id) / "tools.sock"

    def agent_names(self) -> list[str]:
        folder = self.config / "agents"
        if not folder.is_dir():
            return []
        return sorted(
            p.name for p in folder.iterdir() if not p.name.startswith(".") and (p / "settings.toml").is_file()
        )
