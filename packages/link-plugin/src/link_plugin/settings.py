"""Link's own settings files, read by the core and by Link's parts that run outside any sandbox."""

from __future__ import annotations

import secrets
import string
from typing import Any

from pydantic import ConfigDict, Field

from link_plugin.harness import Turns
from link_plugin.model import Model

ID_ALPHABET = string.ascii_lowercase + string.digits
ID_LENGTH = 12


def new_id() -> str:
    """An agent's or machine's ID: 12 random characters that never change."""
    return "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))


class _Settings(Model):
    # A file written by a newer lnk keeps what this one doesn't know.
    model_config = ConfigDict(extra="allow")


class MachineSettings(_Settings):
    """~/.config/lnk/machine.toml"""

    id: str | None = None
    name: str | None = None
    owner: str | None = None
    unsandboxed: bool | None = None
    """false forbids every way to run without a sandbox, grants made earlier included."""
    keep_moved: str = "30d"
    index: str | None = None
    """Where plugins install from: a folder of wheels or an index URL."""
    model_server: str | None = None
    """The local OpenAI-compatible model server (`lnk model serve`'s, Ollama's): its /v1 base URL, or
    its root (http://127.0.0.1:11434), where lnk finds its /v1."""


class InstructionsMax(_Settings):
    notes: int = 4096


class Instructions(_Settings):
    max: InstructionsMax = Field(default_factory=InstructionsMax)


class MemoryTool(_Settings):
    notes: int = 4096
    """[tool.memory] notes: what remember writes up to."""


class ToolSettings(_Settings):
    memory: MemoryTool = Field(default_factory=MemoryTool)


class AgentSettings(_Settings):
    """~/.config/lnk/agents/<agent>/settings.toml"""

    id: str = Field(pattern=r"^[a-z0-9]{12}$")
    name: str
    owner: str
    harness: str | None = None
    model: str | None = None
    memory: str | None = None
    """The memory engine (e.g. link), or none."""
    embeddings: str | None = None
    """The embedding model memory asks for, or `none` for words only."""
    bucket: str | None = None
    """Where `lnk agent backup` keeps the agent (`lnk bucket set`): a folder rclone reaches
    (`s3:my-bucket/work`, `/mnt/disk/work`); None: it has none yet."""
    ports: list[int] = Field(default_factory=list)
    wire_keys: bool | None = None
    """Whether the proxy adds the agent's model key (`lnk agent keys wire on|off`); None: Link's
    default, on. Off: the harness is handed the key at its start and sends it itself."""
    channels: dict[str, dict[str, Any]] = Field(default_factory=dict)
    turns: Turns = Field(default_factory=Turns)
    hops: int = 4
    instructions: Instructions = Field(default_factory=Instructions)
    tool: ToolSettings = Field(default_factory=ToolSettings)
