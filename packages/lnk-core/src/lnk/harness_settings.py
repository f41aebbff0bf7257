"""What an adapter is told about its agent: the settings file at LNK_SETTINGS, and where its model is.

The settings file (`.lnk-settings.json` in the harness's home) is the agent as the adapter sees it:
its name and owner, its folders, its ports, the endpoint's key, the tools' URLs, the channels the
harness speaks itself, its turns and hops. It never holds a model key or a channel's token: a
harness calls its model through the sandbox's proxy or lnk's gateway, which add the key, unless
the owner wired keys off (`lnk agent keys wire off`), and then only the settings of the start
itself carry the key, never those of install or configure.
"""

from __future__ import annotations

from pathlib import Path

from link_plugin.contract import CONTRACT_VERSION
from link_plugin.files import write_atomic
from link_plugin.harness import AgentFolders, AgentRef, HarnessSettings, ModelRef
from link_plugin.harness import Turns as _Turns
from link_plugin.providers import PROVIDERS, provider_of
from lnk.agents import Agent
from lnk.harnesses import Harness
from lnk.machine import load_machine
from lnk.models import local_server

SETTINGS_FILE = ".lnk-settings.json"


def model_ref(agent: Agent, model: str, sandboxed: bool, gateway: str, wired: bool = True) -> ModelRef:
    """Where the harness calls its model: the provider through the proxy, lnk's gateway, or a local
    server. A harness holding its own key (not wired) goes past the gateway, to the provider itself."""
    provider = provider_of(model)
    if provider == "local":
        url = local_server(load_machine(agent.layout))
    elif sandboxed:
        url = PROVIDERS[provider].url
    elif not wired:
        url = f"https://{PROVIDERS[provider].host}{PROVIDERS[provider].base_path}"
    else:
        url = f"{gateway}/model{PROVIDERS[provider].base_path}"
    return ModelRef(name=model, provider=provider, url=url)  # type: ignore[arg-type]


def harness_settings(
    agent: Agent,
    harness: Harness,
    *,
    model: ModelRef | None = None,
    ports: list[int] | None = None,
    key: str | None = None,
    tools: dict[str, str] | None = None,
    channels: dict[str, dict[str, object]] | None = None,
    proxied: bool | None = None,
    allowed: list[str] | None = None,
) -> Path:
    """The agent as the adapter sees it, at LNK_SETTINGS in the harness's home: never a model key or token."""
    folder = agent.folder
    settings = HarnessSettings(
        contract=CONTRACT_VERSION,
        agent=AgentRef(name=agent.name, id=agent.id, owner=agent.settings.owner),
        model=model,
        folders=AgentFolders(
            agent=str(folder.root), home=str(folder.home), chats=str(folder.chats), harness_home=str(harness.home)
        ),
        ports=ports if ports is not None else agent.settings.ports,
        endpoint_key=key,
        tools=tools or {},
        channels=channels or {},
        proxied=proxied,
        allowed=allowed or [],
        turns=_Turns.model_validate(agent.settings.turns.model_dump()),
        hops=agent.settings.hops,
        notes_max=agent.settings.instructions.max.notes,
    )
    harness.home.mkdir(parents=True, exist_ok=True)
    path = harness.home / SETTINGS_FILE
    write_atomic(path, settings.model_dump_json(indent=2))
    return path
