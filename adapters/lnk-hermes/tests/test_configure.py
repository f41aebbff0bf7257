"""`configure` as Link runs it: Hermes's own config written from the settings, Link's MCP servers
beside the owner's, nothing written when nothing changed, and written again when Hermes edited it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml
from agent_settings import PORT, write_settings


def _configure(settings: Path) -> dict[str, Any]:
    env = {**os.environ, "LNK_PORT": str(PORT), "LNK_SETTINGS": str(settings)}
    done = subprocess.run(["lnk-hermes", "configure"], env=env, capture_output=True, text=True, check=True)
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _config(root: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((root / "Harnesses" / "hermes" / "hermes" / "config.yaml").read_text())
    return loaded


def test_configure_writes_hermes_config_from_the_settings(tmp_path: Path) -> None:
    tools = {"memory": "http://127.0.0.1:20402/tools/memory/mcp", "web": "http://127.0.0.1:20402/tools/web/mcp"}
    settings = write_settings(tmp_path, tools)
    assert _configure(settings)["ok"]
    config = _config(tmp_path)
    assert config["model"] == {
        "default": "gpt-6-luna",
        "provider": "custom",
        "base_url": "http://127.0.0.1:20402/openai/v1",
        "api_mode": "chat_completions",
    }
    assert config["mcp_servers"] == {name: {"url": address} for name, address in tools.items()}
    assert all(config[platform]["require_mention"] is True for platform in ("telegram", "slack", "discord"))
    assert config["auxiliary"]["title_generation"]["enabled"] is False
    env = (tmp_path / "Harnesses" / "hermes" / "hermes" / ".env").read_text()
    assert "API_SERVER_HOST=127.0.0.1" in env and f"API_SERVER_PORT={PORT + 1}" in env
    assert "KEY" not in env  # the API server's key is made at each start, never written


def test_only_servers_it_added_are_taken_out(tmp_path: Path) -> None:
    settings = write_settings(tmp_path, {"memory": "http://127.0.0.1:1/m", "web": "http://127.0.0.1:1/w"})
    _configure(settings)
    path = tmp_path / "Harnesses" / "hermes" / "hermes" / "config.yaml"
    mine = _config(tmp_path)
    mine["mcp_servers"]["notion"] = {"url": "http://127.0.0.1:9/notion"}
    path.write_text(yaml.safe_dump(mine))
    settings = write_settings(tmp_path, {"memory": "http://127.0.0.1:1/m"})
    _configure(settings)
    assert _config(tmp_path)["mcp_servers"] == {
        "memory": {"url": "http://127.0.0.1:1/m"},
        "notion": {"url": "http://127.0.0.1:9/notion"},
    }


def test_an_unchanged_configure_does_nothing_and_an_edited_config_is_written_again(tmp_path: Path) -> None:
    settings = write_settings(tmp_path, {"memory": "http://127.0.0.1:1/m"})
    _configure(settings)
    path = tmp_path / "Harnesses" / "hermes" / "hermes" / "config.yaml"
    written = path.stat().st_mtime_ns
    again = _configure(settings)
    assert "nothing to do" in again["detail"] and path.stat().st_mtime_ns == written
    edited = _config(tmp_path)
    edited["model"]["base_url"] = "https://api.openai.com/v1"  # Hermes (or someone) changed its model
    path.write_text(yaml.safe_dump(edited))
    assert "nothing to do" not in _configure(settings)["detail"]
    assert _config(tmp_path)["model"]["base_url"] == "http://127.0.0.1:20402/openai/v1"


def test_an_agent_without_a_model_is_told_how_to_give_it_one(tmp_path: Path) -> None:
    settings = write_settings(tmp_path)
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "model": None}))
    env = {**os.environ, "LNK_PORT": str(PORT), "LNK_SETTINGS": str(settings)}
    done = subprocess.run(["lnk-hermes", "configure"], env=env, capture_output=True, text=True)
    assert done.returncode == 1
    assert "main has no model yet" in done.stderr and "lnk agent keys set anthropic main" in done.stderr
