"""Which provider serves a model, and how its key travels."""

from __future__ import annotations

import pytest

from link_plugin.errors import LinkError
from link_plugin.providers import BY_HOST, PROVIDERS, provider_of


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("claude-sonnet-5-5", "anthropic"),
        ("gpt-6-luna", "openai"),
        ("openrouter/auto", "openrouter"),
        ("anthropic/claude-sonnet-5-5", "openrouter"),
        ("local/qwen3", "local"),
    ],
)
def test_provider_of(model: str, provider: str) -> None:
    assert provider_of(model) == provider


def test_an_unknown_model_says_what_to_name() -> None:
    with pytest.raises(LinkError, match="claude-sonnet-5-5, gpt-6-luna, openrouter/auto"):
        provider_of("llama")


def test_each_default_model_is_its_providers_own() -> None:
    for name, provider in PROVIDERS.items():
        assert provider_of(provider.default_model) == name
        assert BY_HOST[provider.host] is provider


def test_keys_go_in_each_providers_header() -> None:
    assert PROVIDERS["anthropic"].key_headers("k") == {"x-api-key": "k"}
    assert PROVIDERS["openai"].key_headers("k") == {"Authorization": "Bearer k"}
    assert PROVIDERS["openrouter"].url == "http://openrouter.ai/api/v1"
