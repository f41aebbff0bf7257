"""OpenClaw's own configuration, written from Link's settings.

OpenClaw reads `openclaw.json` in its state folder (`OPENCLAW_STATE_DIR`, the `openclaw/` folder
of the harness's home). From the agent's settings `configure` writes:

- **the model**: a provider of its own, `link`, speaking the provider's chat completions
  (Anthropic's messages for Anthropic), replacing OpenClaw's catalog, at the front's model relay
  (`link_plugin.front`): OpenClaw's HTTP client tunnels even plain http through a proxy, which the
  sandbox's proxy can't add the key to, so the front passes each request on as a plain one and
  the proxy adds the key. OpenClaw holds only the relay's key, made at each start.
- **the MCP servers**: each tool the agent may call, its memory among them, by name and address
  on the proxy, in `mcp.servers`. The names it added are recorded (`.lnk-mcp.json`), so a server
  the owner added under another name stays, and one Link no longer hands is taken out.
- **the group policy**: on every messaging channel OpenClaw has, off, and in a group an answer
  only when mentioned; Link's bridges carry only the owner's mention, so only the owner's is
  answered.
- **the gateway**: on the loopback at `LNK_PORT` + 1, its OpenAI-compatible endpoint on, its
  token made at each start and handed to OpenClaw in its environment, never written; its Control
  UI, operator terminal and mDNS advertising off.
- **its managed browser off**: on, it would open a control port and Chrome's DevTools ports on
  the loopback that take no credential.
- its log, workspace and state in its state folder: nothing goes to `/tmp/openclaw`.

`.lnk-configured` holds a hash over the settings given, both releases, this adapter's own files,
the ports, and the file as written. When all of it matches, `configure` does nothing; an
OpenClaw that edited its own config is configured again, so Link's settings win at the next start.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from link_plugin import configured, front
from link_plugin.errors import LinkError
from link_plugin.files import write_atomic
from link_plugin.fronted import upstream_port
from link_plugin.harness import HarnessSettings
from link_plugin.providers import no_model
from lnk_openclaw import __version__, release

STATE = "openclaw"
"""OpenClaw's state folder (OPENCLAW_STATE_DIR) inside the harness's home: config, sessions, workspace."""
CONFIG = "openclaw.json"
ADDED = ".lnk-mcp.json"
PROVIDER = "link"
RELAY_KEY = "OPENCLAW_LINK_RELAY_KEY"
"""The variable holding the key of the front's model relay, in OpenClaw's environment."""
CHANNELS = {"telegram": "groups", "slack": "channels", "discord": "guilds", "whatsapp": "groups", "signal": "groups"}
"""OpenClaw's messaging channels Link also carries, each with the key of its rooms: each channel off,
and in every room answering only a mention."""


def state(home: Path) -> Path:
    return home / STATE


def config_file(home: Path) -> Path:
    return state(home) / CONFIG


def _section(current: dict[str, Any], name: str) -> dict[str, Any]:
    value = current.get(name)
    return dict(value) if isinstance(value, dict) else {}


def _config(
    home: Path, settings: HarnessSettings, first: int, current: dict[str, Any], added: list[str]
) -> dict[str, Any]:
    model = settings.model
    if model is None:
        raise no_model(settings.agent.name)
    folder = state(home)
    config = dict(current)
    gateway = _section(current, "gateway")
    gateway.update(
        mode="local",
        port=upstream_port(first),
        bind="loopback",
        auth={"mode": "token"},  # the token is OPENCLAW_GATEWAY_TOKEN, made at each start
        controlUi={**_section(gateway, "controlUi"), "enabled": False},
        terminal={**_section(gateway, "terminal"), "enabled": False},
        http={"endpoints": {"chatCompletions": {"enabled": True}}},
    )
    config["gateway"] = gateway
    config["discovery"] = {"mdns": {"mode": "off"}}
    config["browser"] = {**_section(current, "browser"), "enabled": False}
    config["logging"] = {**_section(current, "logging"), "file": str(folder / "logs" / "openclaw.log")}
    provider: dict[str, Any] = {
        "baseUrl": front.model_relay(first),
        "api": "anthropic-messages" if model.provider == "anthropic" else "openai-completions",
        "models": [{"id": model.name, "name": model.name}],
    }
    # The relay's key, made at each start and given in OpenClaw's environment, never written.
    provider["apiKey"] = "${" + RELAY_KEY + "}"
    config["models"] = {"mode": "replace", "providers": {PROVIDER: provider}}
    agents = _section(current, "agents")
    defaults = _section(agents, "defaults")
    defaults.update(model={"primary": f"{PROVIDER}/{model.name}"}, workspace=str(folder / "workspace"))
    config["agents"] = {**agents, "defaults": defaults}
    mcp = _section(current, "mcp")
    servers = _section(mcp, "servers")
    for name in added:
        servers.pop(name, None)
    for name, address in sorted(settings.tools.items()):
        servers[name] = {"url": address, "transport": "streamable-http"}
    config["mcp"] = {**mcp, "servers": servers}
    channels = _section(current, "channels")
    for channel, rooms in CHANNELS.items():
        section = _section(channels, channel)
        section.update({"enabled": False, rooms: {"*": {"requireMention": True}}})
        channels[channel] = section
    config["channels"] = channels
    return config


def _digest(settings: HarnessSettings, first: int, written: Path) -> str:
    return configured.digest(
        settings,
        first,
        harness=f"openclaw {release.OPENCLAW_VERSION} {release.pin()}",
        adapter=f"lnk-openclaw {__version__}",
        code=Path(__file__).parent,
        files=[written],
    )


def configure(home: Path, settings: HarnessSettings, first: int) -> str:
    """OpenClaw's config written from the settings, unless nothing changed. What was done, in words."""
    path = config_file(home)
    if configured.unchanged(home, _digest(settings, first, path)):
        return "OpenClaw's config is as the settings say: nothing to do"
    try:
        current = json.loads(path.read_text()) if path.exists() else {}
    except ValueError as exc:
        raise LinkError(
            f"OpenClaw's config {path} isn't JSON: {exc}", "Fix it or remove it; configure writes it again."
        ) from exc
    record = home / ADDED
    added = json.loads(record.read_text()) if record.exists() else []
    config = _config(home, settings, first, current if isinstance(current, dict) else {}, added)
    write_atomic(path, json.dumps(config, indent=2, sort_keys=True) + "\n")
    write_atomic(record, json.dumps(sorted(settings.tools)))
    configured.mark(home, _digest(settings, first, path))
    model = settings.model.name if settings.model else "-"
    return f"OpenClaw configured: model {model}, {len(settings.tools)} MCP servers"
