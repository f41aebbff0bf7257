"""Keys go only to the proxy (here, lnk's gateway): never to the harness or any file the sandbox sees."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import httpx
import pytest
from world import World

from link_plugin.keys import KeyStore
from link_plugin.layout import Layout
from link_plugin.providers import PROVIDERS
from lnk.approvals import Approvals
from lnk.gateway import Gateway, ModelRelay
from lnk.toolbridge import CallLog, ToolBridge


def _files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]


def test_a_key_never_reaches_the_harness_its_environment_or_its_folders(world: World) -> None:
    world.lnk("agent", "keys", "set", "anthropic", "work", "--stdin", input="sk-ant-second-" + "x" * 20)
    world.start("work", "--model", "gpt-6-luna")
    assert world.chat("work", "hi").strip() == "ok"
    assert world.provider.requests[-1].headers["authorization"] == f"Bearer {world.key}"

    pid = world.harness_pid("work")
    environ = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    secrets = [world.key, "sk-ant-second-"]
    for secret in secrets:
        assert secret not in environ and secret not in cmdline
    # The harness's whole view of the agent: its folder (Home, chats, its own home with its settings).
    for path in _files_under(world.agent("work").folder.root):
        text = path.read_bytes().decode(errors="replace")
        for secret in secrets:
            assert secret not in text, f"a key is in {path}"
    settings = world.harness_settings("work")
    assert settings.model is not None and settings.model.provider == "openai"
    assert "LNK_UPSTREAM" not in environ and "LNK_CONFIG_DIR" not in environ

    # The keys are kept 0600, in Link's settings folder, which no sandbox shows.
    keys = world.agent("work").config.keys
    assert keys.stat().st_mode & 0o077 == 0
    listed = json.loads(world.lnk("agent", "keys", "list", "work", "--json").stdout)
    assert listed == {"agent": "work", "keys": ["anthropic", "openai"], "secure": True, "wired": True}
    assert world.key not in world.lnk("agent", "keys", "list", "work").stdout

    # The gateway adds the key only for who holds its secret path, which only the harness's settings hold.
    spec = world.spec("work")
    gateway = f"http://127.0.0.1:{spec.gateway}"
    body = {"model": "gpt-6-luna", "messages": [{"role": "user", "content": "x"}]}
    before = len(world.provider.requests)
    for path in ("/model/v1/chat/completions", "/wrong-secret/model/v1/chat/completions", "/v1/chat/completions"):
        assert httpx.post(gateway + path, json=body).status_code == 404
    assert len(world.provider.requests) == before
    assert settings.model.url.startswith(f"{gateway}/{spec.secret}/model")
    # Whatever key a caller sends is replaced, never passed on.
    sent = httpx.post(f"{settings.model.url}/chat/completions", json=body, headers={"Authorization": "Bearer mine"})
    assert sent.status_code == 200
    assert world.provider.requests[-1].headers["authorization"] == f"Bearer {world.key}"


def test_keys_not_wired_are_handed_to_the_harness_at_start_and_the_gateway_adds_none(world: World) -> None:
    """lnk agent keys wire off: for a harness holding its own key, which calls its provider itself."""
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    said = world.lnk("agent", "keys", "wire", "off", "work")
    assert "holds its key" in said.stderr
    assert json.loads(world.lnk("agent", "keys", "list", "work", "--json").stdout)["wired"] is False
    world.start("work")
    settings = world.harness_settings("work")
    assert settings.model is not None and settings.model.key == world.key
    assert settings.model.url == "https://api.openai.com/v1"  # past the gateway, which adds nothing
    assert world.spec("work").provider is None
    gateway = f"http://127.0.0.1:{world.spec('work').gateway}/{world.spec('work').secret}"
    body = {"model": "gpt-6-luna", "messages": [{"role": "user", "content": "x"}]}
    assert httpx.post(f"{gateway}/model/v1/chat/completions", json=body).status_code == 404

    said = world.lnk("agent", "keys", "wire", "default", "work")
    assert "proxy adds its key" in said.stderr and "next start" in said.stderr  # it runs: a restart takes it
    assert json.loads(world.lnk("agent", "keys", "list", "work", "--json").stdout)["wired"] is True


def test_a_harness_holding_its_key_with_none_kept_is_told_which_to_keep(world: World) -> None:
    world.lnk("agent", "keys", "wire", "off", "work")
    refused = world.lnk(
        "agent", "start", "work", "--harness", "mini", "--no-sandbox", "--model", "gpt-6-luna", ok=False
    )
    assert "holds its own openai key" in refused.stderr and "lnk agent keys set openai work" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_keys_set_list_delete_and_bad_providers(world: World) -> None:
    world.lnk("agent", "keys", "set", "openrouter", "work", "--stdin", input="sk-or-1")
    bad = world.lnk("agent", "keys", "set", "nosuch", "work", "--stdin", input="x", ok=False)
    assert "anthropic, openai, openrouter" in bad.stderr
    empty = world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input="  ", ok=False)
    assert "not a key" in empty.stderr
    world.lnk("agent", "keys", "delete", "openrouter", "work")
    assert json.loads(world.lnk("agent", "keys", "list", "work", "--json").stdout)["keys"] == []
    layout = Layout(config=world.root / "config", agents=world.root / "agents")
    assert not (layout.agent_config("work").keys.read_text().count("sk-or-1"))
    assert os.stat(layout.agent_config("work").keys).st_mode & 0o777 == 0o600


def test_an_upstream_with_a_path_takes_the_providers_base_path(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the sandbox's proxy reads LNK_UPSTREAM_<PROVIDER>, so does lnk's gateway."""
    monkeypatch.setenv("LNK_UPSTREAM_OPENROUTER", world.provider.url)  # .../v1, for OpenRouter's /api/v1
    keys = KeyStore(world.root / "keys.json")
    keys.set("openrouter", world.key)
    relay = ModelRelay(PROVIDERS["openrouter"], keys)
    app = Gateway(ToolBridge([], Approvals(), CallLog(world.root / "tools.log"), str), "s3cret", relay)

    async def ask(path: str) -> int:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            body = {"model": "openrouter/auto", "messages": [{"role": "user", "content": "x"}]}
            return (await client.post(path, json=body)).status_code

    assert asyncio.run(ask("/s3cret/model/api/v1/chat/completions")) == 200
    assert world.provider.requests[-1].path == "/v1/chat/completions"
    assert world.provider.requests[-1].headers["authorization"] == f"Bearer {world.key}"
    assert asyncio.run(ask("/s3cret/model/elsewhere/chat/completions")) == 404
