"""The agents one process answers for, each keyed by its ID and its owner, never its name.

The process's own agent is the one `$LNK_SETTINGS` names; its tools come from its settings and
its environment (`$LNK_MEMORY`, `$LNK_TOOLS`). `serve --settings` can add more agents, of the
same owner or others, each with the tools its own settings name.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from link_plugin import LinkError, parse_answer
from link_plugin.harness import ENV_MEMORY, ENV_TOOLS, HarnessSettings
from lnk_harness.tools import KEPT_LISTINGS, Toolbox
from lnk_harness.turns import Turns

MEMORY = "memory"
"""The name the memory tool at $LNK_MEMORY goes by in a conversation's tools (and Link-Tools)."""


@dataclass(frozen=True)
class AgentKey:
    id: str
    owner: str


@dataclass
class Agent:
    settings: HarnessSettings
    turns: Turns

    @property
    def key(self) -> AgentKey:
        return AgentKey(self.settings.agent.id, self.settings.agent.owner)

    @property
    def name(self) -> str:
        return self.settings.agent.name

    def holds(self, endpoint_key: str) -> bool:
        return hmac.compare_digest(endpoint_key.encode(), (self.settings.endpoint_key or "").encode())


def env_tools(env: Mapping[str, str]) -> dict[str, str]:
    """The tools the environment names: LNK_TOOLS (a JSON object of name -> address) and LNK_MEMORY."""
    tools: dict[str, str] = {}
    raw = env.get(ENV_TOOLS, "").strip()
    if raw:
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise LinkError(
                f"{ENV_TOOLS} is not JSON ({exc.msg})", 'It holds an object: {"name": "http://.../mcp"}.'
            ) from None
        if not isinstance(parsed, dict) or not all(isinstance(v, str) for v in parsed.values()):
            raise LinkError(
                f"{ENV_TOOLS} is not an object of tool names to addresses", 'e.g. {"name": "http://.../mcp"}'
            )
        tools.update(parsed)
    if env.get(ENV_MEMORY):
        tools[MEMORY] = env[ENV_MEMORY]
    return tools


def once_each(tools: dict[str, str]) -> dict[str, str]:
    """One name per server: Link names the memory tool among the agent's tools and at $LNK_MEMORY,
    and a server named twice would be listed twice at every turn. `memory` is the name kept."""
    kept: dict[str, str] = {}
    for name in sorted(tools, key=lambda name: name != MEMORY):
        kept.setdefault(tools[name], name)
    return {name: address for name, address in tools.items() if kept[address] == name}


def read_settings(path: Path) -> HarnessSettings:
    try:
        text = path.read_text()
    except OSError as exc:
        raise LinkError(
            f"the settings file {path} can't be read ({exc.strerror})", "Link writes it at each start."
        ) from exc
    settings = parse_answer(HarnessSettings, text, source=f"the settings file {path}")
    if settings.model is None:
        raise LinkError(
            f"{path}: the agent {settings.agent.name} names no model",
            f"Give it one: lnk agent start {settings.agent.name} --model <model>.",
        )
    if not settings.endpoint_key:
        raise LinkError(
            f"{path}: no endpoint_key", "Link makes the endpoint's key at each start; start the agent with lnk."
        )
    return settings


def load(paths: list[Path], own: Path | None, env: Mapping[str, str], http: httpx.AsyncClient) -> list[Agent]:
    agents: dict[AgentKey, Agent] = {}
    chats: dict[Path, AgentKey] = {}
    extra = env_tools(env)
    for path in paths:
        settings = read_settings(path)
        tools = dict(settings.tools)
        if own is not None and path.resolve() == own.resolve():
            tools.update(extra)
        toolbox = Toolbox(once_each(tools), kept=Path(settings.folders.chats) / KEPT_LISTINGS)
        agent = Agent(settings, Turns(settings, toolbox, http))
        if agent.key in agents:
            raise LinkError(f"{path}: the agent {agent.key.id} of {agent.key.owner} is named twice")
        folder = Path(settings.folders.chats).resolve()
        if folder in chats:
            raise LinkError(
                f"{path}: the agent {agent.key.id} keeps its conversations in {folder}, as {chats[folder].id} does",
                "Each agent has a folder of its own.",
            )
        agents[agent.key] = agent
        chats[folder] = agent.key
    return list(agents.values())
