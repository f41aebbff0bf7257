"""An agent's settings as Link hands them to the adapter (LNK_SETTINGS), for the tests."""

from __future__ import annotations

from pathlib import Path

from link_plugin.contract import CONTRACT_VERSION
from link_plugin.harness import AgentFolders, AgentRef, HarnessSettings, ModelRef

PORT = 20500


def write_settings(root: Path, tools: dict[str, str] | None = None) -> Path:
    """The settings of an agent whose folder is `root`, its harness's home `root/Harnesses/openclaw`."""
    home = root / "Harnesses" / "openclaw"
    home.mkdir(parents=True, exist_ok=True)
    settings = HarnessSettings(
        contract=CONTRACT_VERSION,
        agent=AgentRef(name="main", id="openclawag12", owner="ana@laptop"),
        model=ModelRef(name="gpt-6-luna", provider="openai", url="http://127.0.0.1:20502/openai/v1"),
        folders=AgentFolders(
            agent=str(root), home=str(root / "Home"), chats=str(root / "chats"), harness_home=str(home)
        ),
        ports=[PORT, PORT + 1],
        tools=tools or {},
    )
    path = root / "settings.json"
    path.write_text(settings.model_dump_json())
    return path
