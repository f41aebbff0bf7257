"""Hosted model providers: where each is, how its key is sent, and Link's default model for it.

The harness calls a provider in plain http through its proxy (`http://api.openai.com/v1`); the
proxy, outside the sandbox, speaks TLS to the provider and adds the key. Only providers named
here get a key, so no other host ever sees one.

A plain table, without pydantic: the sandbox's proxy loads it as its first connection comes.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from link_plugin.errors import LinkError
from link_plugin.sandbox_terms import UPSTREAM_CA_ENV as UPSTREAM_CA_ENV
from link_plugin.sandbox_terms import UPSTREAM_ENV as UPSTREAM_ENV

ProviderName = Literal["anthropic", "openai", "openrouter"]


class Provider(NamedTuple):
    name: ProviderName
    host: str
    base_path: str
    """The API's path prefix, e.g. /v1 or /api/v1."""
    key_header: str
    key_prefix: str
    default_model: str
    api: Literal["openai", "anthropic"]

    @property
    def url(self) -> str:
        """The plain-http base URL a harness behind the proxy calls."""
        return f"http://{self.host}{self.base_path}"

    def key_headers(self, key: str) -> dict[str, str]:
        return {self.key_header: f"{self.key_prefix}{key}"}


PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider(
        name="anthropic",
        host="api.anthropic.com",
        base_path="/v1",
        key_header="x-api-key",
        key_prefix="",
        default_model="claude-sonnet-5-5",
        api="anthropic",
    ),
    "openai": Provider(
        name="openai",
        host="api.openai.com",
        base_path="/v1",
        key_header="Authorization",
        key_prefix="Bearer ",
        default_model="gpt-6-luna",
        api="openai",
    ),
    "openrouter": Provider(
        name="openrouter",
        host="openrouter.ai",
        base_path="/api/v1",
        key_header="Authorization",
        key_prefix="Bearer ",
        default_model="openrouter/auto",
        api="openai",
    ),
}

BY_HOST: dict[str, Provider] = {p.host: p for p in PROVIDERS.values()}


def provider_of(model: str) -> str:
    """Which provider a model name belongs to: `local/<name>`, `openrouter/...`, claude-*, gpt-*/o*."""
    if model.startswith("local/"):
        return "local"
    if model.startswith("openrouter/") or model.count("/") == 1:
        return "openrouter"
    if model.startswith("claude-"):
        return "anthropic"
    if model.startswith(("gpt-", "o1", "o3", "o4", "chatgpt-")):
        return "openai"
    raise LinkError(
        f"lnk can't tell which provider serves the model {model!r}.",
        "Name one of theirs (claude-sonnet-5-5, gpt-6-luna, openrouter/auto), or local/<name> for a local server.",
    )


def no_model(agent: str) -> LinkError:
    """What an agent without a model is told, by lnk at its start or by a harness's adapter: the
    two ways to give it one."""
    return LinkError(
        f"{agent} has no model yet.",
        f"Give it a key (`lnk agent keys set anthropic {agent}`, or openai, openrouter) and start it again,"
        " or start it with --model local/<name> for a model served on this machine.",
    )
