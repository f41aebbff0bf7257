"""`configure` as Link runs it: OpenClaw's own config written from the settings, Link's MCP servers
beside the owner's, its browser and own channels off, nothing written when nothing changed, and
written again when OpenClaw edited it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from agent_settings import PORT, write_settings
from lnk_openclaw import release

from link_plugin import node


def _configure(settings: Path) -> dict[str, Any]:
    env = {**os.environ, "LNK_PORT": str(PORT), "LNK_SETTINGS": str(settings)}
    done = subprocess.run(["lnk-openclaw", "configure"], env=env, capture_output=True, text=True, check=True)
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def _path(root: Path) -> Path:
    return root / "Harnesses" / "openclaw" / "openclaw" / "openclaw.json"


def _config(root: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(_path(root).read_text())
    return loaded


def test_configure_writes_openclaw_config_from_the_settings(tmp_path: Path) -> None:
    tools = {"memory": "http://127.0.0.1:20502/tools/memory/mcp", "web": "http://127.0.0.1:20502/tools/web/mcp"}
    assert _configure(write_settings(tmp_path, tools))["ok"]
    config = _config(tmp_path)
    state = tmp_path / "Harnesses" / "openclaw" / "openclaw"
    assert config["models"] == {
        "mode": "replace",
        "providers": {
            "link": {
                "baseUrl": f"http://127.0.0.1:{PORT}/_link/model",  # the front's relay
                "api": "openai-completions",
                "apiKey": "${OPENCLAW_LINK_RELAY_KEY}",  # made at each start, never written
                "models": [{"id": "gpt-6-luna", "name": "gpt-6-luna"}],
            }
        },
    }
    assert config["agents"]["defaults"]["model"] == {"primary": "link/gpt-6-luna"}
    assert config["mcp"]["servers"] == {
        name: {"url": address, "transport": "streamable-http"} for name, address in tools.items()
    }
    gateway = config["gateway"]
    assert (gateway["bind"], gateway["port"], gateway["auth"]) == ("loopback", PORT + 1, {"mode": "token"})
    assert gateway["http"]["endpoints"]["chatCompletions"]["enabled"] is True
    assert gateway["terminal"]["enabled"] is False and gateway["controlUi"]["enabled"] is False
    assert config["browser"]["enabled"] is False
    rooms = {"telegram": "groups", "slack": "channels", "discord": "guilds", "whatsapp": "groups", "signal": "groups"}
    for channel, room in rooms.items():
        assert config["channels"][channel] == {"enabled": False, room: {"*": {"requireMention": True}}}
    # Everything it writes is in its home: its log, its workspace.
    assert config["logging"]["file"].startswith(str(state)) and config["agents"]["defaults"]["workspace"].startswith(
        str(state)
    )
    # No key is written: the proxy adds the model's, and the gateway's token is made at each start.
    assert "token" not in gateway["auth"]


def test_only_servers_it_added_are_taken_out(tmp_path: Path) -> None:
    _configure(write_settings(tmp_path, {"memory": "http://127.0.0.1:1/m", "web": "http://127.0.0.1:1/w"}))
    mine = _config(tmp_path)
    mine["mcp"]["servers"]["notion"] = {"url": "http://127.0.0.1:9/notion", "transport": "streamable-http"}
    _path(tmp_path).write_text(json.dumps(mine))
    _configure(write_settings(tmp_path, {"memory": "http://127.0.0.1:1/m"}))
    assert sorted(_config(tmp_path)["mcp"]["servers"]) == ["memory", "notion"]


def test_an_unchanged_configure_does_nothing_and_an_edited_config_is_written_again(tmp_path: Path) -> None:
    settings = write_settings(tmp_path, {"memory": "http://127.0.0.1:1/m"})
    _configure(settings)
    written = _path(tmp_path).stat().st_mtime_ns
    assert "nothing to do" in _configure(settings)["detail"] and _path(tmp_path).stat().st_mtime_ns == written
    edited = _config(tmp_path)
    edited["browser"]["enabled"] = True  # OpenClaw (or someone) turned its browser on
    _path(tmp_path).write_text(json.dumps(edited))
    assert "nothing to do" not in _configure(settings)["detail"]
    assert _config(tmp_path)["browser"]["enabled"] is False


def test_openclaw_itself_takes_the_config_written(installed: Path, tmp_path: Path) -> None:
    _configure(write_settings(tmp_path, {"memory": "http://127.0.0.1:1/m"}))
    state = tmp_path / "Harnesses" / "openclaw" / "openclaw"
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "OPENCLAW_STATE_DIR": str(state),
        "OPENCLAW_CONFIG_PATH": str(_path(tmp_path)),
    }
    entry = installed / release.RELEASE.folder / release.ENTRY
    done = subprocess.run(
        node.command(entry, "config", "validate"), env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and "Config valid" in done.stdout, done.stdout + done.stderr


def test_an_agent_without_a_model_is_told_how_to_give_it_one(tmp_path: Path) -> None:
    settings = write_settings(tmp_path)
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "model": None}))
    env = {**os.environ, "LNK_PORT": str(PORT), "LNK_SETTINGS": str(settings)}
    done = subprocess.run(["lnk-openclaw", "configure"], env=env, capture_output=True, text=True)
    assert done.returncode == 1
    assert "main has no model yet" in done.stderr and "lnk agent keys set anthropic main" in done.stderr
