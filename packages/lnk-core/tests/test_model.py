"""Models on this machine: `lnk model serve`, and agents with --model local/<name>."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from conftest import BIN
from world import World

from link_conformance import StandInProvider
from link_plugin.files import read_toml


def test_serve_says_what_to_install_when_nothing_is(world: World) -> None:
    world.env["PATH"] = f"{BIN}{os.pathsep}/usr/bin:/bin"
    said = world.lnk("model", "serve", "--port", "1", ok=False)
    assert "No local model server is installed" in said.stderr
    assert "ollama.com" in said.stderr and "llama-server" in said.stderr


def test_a_local_model_is_called_where_it_is_served_without_any_key(world: World) -> None:
    with StandInProvider() as local:
        served = world.lnk("model", "serve", "--port", str(urlsplit(local.origin).port))
        assert served.stdout.strip() == local.url
        assert read_toml(world.root / "config" / "machine.toml")["model_server"] == local.url
        world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input="unused")
        world.lnk("agent", "keys", "delete", "openai", "work")
        world.lnk("agent", "start", "work", "--harness", "mini", "--model", "local/qwen3", "--no-sandbox")
        model = world.harness_settings("work").model
        assert model is not None and model.provider == "local" and model.url == local.url
        assert world.chat("work", "hi").strip() == "ok"
        assert local.requests[-1].json["model"] == "local/qwen3"
        assert "authorization" not in local.requests[-1].headers


def test_a_server_named_by_its_root_as_ollamas_docs_write_it_is_found_at_its_v1(world: World) -> None:
    """LNK_MODEL_SERVER=http://127.0.0.1:11434, without /v1: a stand-in serving the OpenAI API at /v1
    only, as Ollama does (its root answers no chat completions), is asked where, and answers."""
    with StandInProvider() as local:
        world.env["LNK_MODEL_SERVER"] = local.origin
        world.lnk("agent", "start", "work", "--harness", "mini", "--model", "local/qwen3", "--no-sandbox")
        model = world.harness_settings("work").model
        assert model is not None and model.url == f"{local.origin}/v1"
        assert world.chat("work", "hi").strip() == "ok"
        assert local.requests[-1].path == "/v1/chat/completions"
