"""Hermes Agent's own configuration, written from Link's settings.

Hermes reads `config.yaml` and `.env` in its home (`HERMES_HOME`, the `hermes/` folder of the
harness's home). From the agent's settings `configure` writes:

- **the model**: Hermes's `custom` provider at the model's address, speaking the provider's
  chat completions (Anthropic's messages for Anthropic). Behind the proxy that is the
  provider's plain-http address and the key is the proxy's to add: no key is written anywhere.
- **the MCP servers**: each tool the agent may call, its memory among them, by name and address
  on the proxy, in `mcp_servers`. The names it added are recorded (`.lnk-mcp.json`), so a server
  the owner added under another name stays, and one Link no longer hands is taken out.
- **the group policy**: on every messaging platform Hermes has, an answer only when mentioned;
  Link's bridges carry only the owner's mention, so only the owner's is answered.
- **the API server** (`.env`): on the loopback, at the port after the endpoint's (`LNK_PORT` + 1).
  Its key is made at each start and handed to Hermes in its environment, never written.
- no session titles: Hermes asks its model for one after a first answer, a call the owner
  never sees.

`.lnk-configured` holds a hash over the settings given, both releases, this adapter's own files,
the ports, and the two files as written. When all of it matches, `configure` does nothing; a
Hermes that edited its own config is configured again, so Link's settings win at the next start.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from link_plugin import configured
from link_plugin.errors import LinkError
from link_plugin.files import write_atomic
from link_plugin.fronted import upstream_port
from link_plugin.harness import HarnessSettings
from link_plugin.providers import no_model
from lnk_hermes import __version__, release

STATE = "hermes"
"""Hermes's own home (HERMES_HOME) inside the harness's: its config, sessions and memory."""
ADDED = ".lnk-mcp.json"
PLATFORMS = ("telegram", "slack", "discord", "whatsapp", "signal", "mattermost", "matrix")
"""Hermes's messaging platforms: each answers only a mention, should it ever be turned on."""


def hermes_home(home: Path) -> Path:
    return home / STATE


def _config(settings: HarnessSettings, current: dict[str, Any], added: list[str]) -> tuple[dict[str, Any], list[str]]:
    if settings.model is None:
        raise no_model(settings.agent.name)
    config = dict(current)
    model = current.get("model")
    config["model"] = {
        **(model if isinstance(model, dict) else {}),
        "default": settings.model.name,
        "provider": "custom",
        "base_url": settings.model.url,
        # Said, not guessed from the address: Hermes would take OpenAI's for its Responses API.
        "api_mode": "anthropic_messages" if settings.model.provider == "anthropic" else "chat_completions",
    }
    config["model"].pop("api_key", None)  # the proxy adds the key; a key written here would be read by Hermes
    servers = dict(current.get("mcp_servers") or {})
    for name in added:
        servers.pop(name, None)
    for name, address in sorted(settings.tools.items()):
        servers[name] = {"url": address}
    config["mcp_servers"] = servers
    auxiliary = dict(current.get("auxiliary") or {})
    auxiliary["title_generation"] = {**(auxiliary.get("title_generation") or {}), "enabled": False}
    config["auxiliary"] = auxiliary
    for platform in PLATFORMS:
        section = current.get(platform)
        config[platform] = {**(section if isinstance(section, dict) else {}), "require_mention": True}
    return config, sorted(settings.tools)


def _env_file(first: int) -> str:
    return f"API_SERVER_ENABLED=true\nAPI_SERVER_HOST=127.0.0.1\nAPI_SERVER_PORT={upstream_port(first)}\n"


def _digest(settings: HarnessSettings, first: int, files: list[Path]) -> str:
    return configured.digest(
        settings,
        first,
        harness=f"hermes-agent {release.HERMES_VERSION} {release.pin()}",
        adapter=f"lnk-hermes {__version__}",
        code=Path(__file__).parent,
        files=files,
    )


def configure(home: Path, settings: HarnessSettings, first: int) -> str:
    """Hermes's config written from the settings, unless nothing changed. What was done, in words."""
    state = hermes_home(home)
    config_file, env_file = state / "config.yaml", state / ".env"
    files = [config_file, env_file]
    if configured.unchanged(home, _digest(settings, first, files)):
        return "Hermes's config is as the settings say: nothing to do"
    try:
        current = yaml.safe_load(config_file.read_text()) if config_file.exists() else {}
    except yaml.YAMLError as exc:
        raise LinkError(
            f"Hermes's config {config_file} isn't YAML: {exc}", "Fix it or remove it; configure writes it again."
        ) from exc
    record = home / ADDED
    added = json.loads(record.read_text()) if record.exists() else []
    config, ours = _config(settings, current if isinstance(current, dict) else {}, added)
    state.mkdir(parents=True, exist_ok=True)
    write_atomic(config_file, yaml.safe_dump(config, sort_keys=True))
    write_atomic(env_file, _env_file(first))
    write_atomic(record, json.dumps(ours))
    configured.mark(home, _digest(settings, first, files))
    return f"Hermes configured: model {settings.model.name if settings.model else '-'}, {len(ours)} MCP servers"
