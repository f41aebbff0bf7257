"""An agent's settings as Link hands them to the adapter (LNK_SETTINGS), for the tests."""

from __future__ import annotations

from pathlib import Path

from link_conformance.running import agent_settings
from link_plugin.harness import AgentRef, ModelRef
from link_plugin.layout import AgentFolder

PORT = 20400


def write_settings(root: Path, tools: dict[str, str] | None = None) -> Path:
    """The settings of an agent whose folder is `root`, its harness's home `root/Harnesses/hermes`."""
    folder = AgentFolder(root)
    folder.harness_home("hermes").mkdir(parents=True, exist_ok=True)
    agent = AgentRef(name="main", id="hermesagent1", owner="ana@laptop")
    model = ModelRef(name="gpt-6-luna", provider="openai", url="http://127.0.0.1:20402/openai/v1")
    settings = agent_settings(folder, "hermes", model, [PORT, PORT + 1], agent=agent, tools=tools)
    path = root / "settings.json"
    path.write_text(settings.model_dump_json())
    return path
