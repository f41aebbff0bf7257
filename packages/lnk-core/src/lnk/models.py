"""Which model an agent uses, and the address its harness calls it at.

A hosted model's key is added outside the harness: by the sandbox's proxy, or, when the harness
runs without a sandbox, by lnk's own gateway. The owner may turn that off for an agent whose
harness holds its own key (`lnk agent keys wire off`): then its start is handed the key. A local
model (`local/<name>`) is called where it is served: Ollama's, llama.cpp's or `lnk model serve`'s
address.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from link_plugin.errors import LinkError
from link_plugin.keys import KeyStore
from link_plugin.providers import PROVIDERS, Provider, provider_of
from link_plugin.settings import AgentSettings, MachineSettings

OLLAMA = "http://127.0.0.1:11434/v1"
ENV_MODEL_SERVER = "LNK_MODEL_SERVER"


def default_model(keys: KeyStore) -> str | None:
    """Link's default for the first provider the agent has a key for."""
    held = set(keys.names())
    return next((p.default_model for p in PROVIDERS.values() if p.name in held), None)


def keys_wired(settings: AgentSettings) -> bool:
    """Whether the proxy (or lnk's gateway) adds the agent's model key: Link's default, unless the
    owner said otherwise (`lnk agent keys wire`)."""
    return settings.wire_keys is not False


def held_key(agent: str, keys: KeyStore, provider: str) -> str:
    """The key handed to a harness that holds its own (keys not wired)."""
    key = keys.get(provider)
    if key is None:
        raise LinkError(
            f"{agent}'s harness holds its own {provider} key (lnk agent keys wire off), and {agent} has none.",
            f"Keep one: lnk agent keys set {provider} {agent}.",
        )
    return key


def check_model(model: str) -> str:
    provider_of(model)
    if model.startswith("local/") and not model.removeprefix("local/"):
        raise LinkError("--model local/ names no model.", "Say which: --model local/qwen3.")
    return model


def hosted(model: str) -> Provider | None:
    name = provider_of(model)
    return PROVIDERS.get(name)


def answers(base: str) -> bool:
    """Whether an OpenAI-compatible API answers at this base URL (its model list)."""
    import httpx  # only a local model's start asks: every other command that reads models starts leaner

    try:
        return httpx.get(f"{base}/models", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def openai_base(server: str) -> str:
    """The server's OpenAI-compatible base URL. One named by its root, as Ollama's docs write it
    (http://127.0.0.1:11434), is asked: its /v1 when that answers, else its root when that does;
    a server not answering yet gets /v1, where Ollama, llama.cpp and `lnk model serve` all serve."""
    if urlsplit(server).path.strip("/"):
        return server
    return next((base for base in (f"{server}/v1", server) if answers(base)), f"{server}/v1")


def configured_server(machine: MachineSettings) -> str | None:
    """The local OpenAI-compatible server named by LNK_MODEL_SERVER or machine.toml, if any, as its
    OpenAI-compatible base URL."""
    server = os.environ.get(ENV_MODEL_SERVER) or machine.model_server
    return openai_base(server.rstrip("/")) if server else None


def local_server(machine: MachineSettings) -> str:
    """Where a local/<name> model is served: the configured server, else Ollama's usual address."""
    return configured_server(machine) or OLLAMA


def loopback_port(url: str) -> int | None:
    """The port of a model server on this machine's loopback, which a sandboxed harness may reach."""
    parts = urlsplit(url)
    if parts.hostname in ("127.0.0.1", "localhost", "::1"):
        return parts.port or 80
    return None
