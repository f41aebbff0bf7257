"""The model is called through the address given, in its provider's API, and never with a key."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import trustme
from conftest import MAIN
from helpers import Harness, ask, say, settings_for
from listing import tools_listed
from mcp_tools import ToolServers
from proxy import KeyAddingProxy

from link_conformance.provider import Reply, StandInProvider, ToolCall
from link_plugin import wire
from link_plugin.providers import PROVIDERS
from lnk_harness.conversation import Conversation


def test_anthropic_messages_with_a_tool_round_trip(
    tmp_path: Path, provider: StandInProvider, servers: ToolServers
) -> None:
    settings = settings_for(
        tmp_path,
        MAIN,
        provider.url,
        provider="anthropic",
        model_name="claude-sonnet-5-5",
        tools={"memory": servers.address("memory")},
    )
    (Path(settings.folders.home) / "instructions" / "who.md").write_text("You are terse.")
    with Harness([settings]) as harness:
        tools_listed(harness, provider)
        provider.script(
            Reply(text="Looking.", tool_calls=[ToolCall("search", {"query": "lease"})], chunks=2),
            Reply(text="It ends in March.", chunks=3),
        )
        before = len(provider.requests)
        assert say(harness, "when does the lease end?", "telegram:9") == (200, "Looking.\n\nIt ends in March.")
    first, second = provider.requests[before:]
    assert first.path == "/v1/messages"
    assert first.json["model"] == "claude-sonnet-5-5" and first.json["stream"] is True
    assert "You are terse." in first.json["system"]
    assert first.json["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "when does the lease end?"}]}
    ]
    search = next(t for t in first.json["tools"] if t["name"] == "search")
    assert search["description"] == "Search the agent's memory by words and meaning."
    assert search["input_schema"]["required"] == ["query"]
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert "x-api-key" not in first.headers and "authorization" not in first.headers
    assistant, results = second.json["messages"][1:]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {"type": "text", "text": "Looking."}
    use = assistant["content"][1]
    assert use["type"] == "tool_use" and use["name"] == "search" and use["input"] == {"query": "lease"}
    assert results["role"] == "user" and results["content"][0]["type"] == "tool_result"
    assert results["content"][0]["tool_use_id"] == use["id"]
    assert servers.called("search")[-1] == {"query": "lease"}


def test_through_the_proxy_which_adds_the_key(tmp_path: Path) -> None:
    """As in the sandbox: HTTP_PROXY names Link's proxy, the harness calls the provider's plain-http
    address with no key, and only the proxy's request to the provider carries one."""
    with StandInProvider(key="sk-only-the-proxy-has-this") as keyed:
        openai = PROVIDERS["openai"]
        with KeyAddingProxy({openai.host: keyed.origin}, key="sk-only-the-proxy-has-this") as proxy:
            settings = settings_for(tmp_path, MAIN, openai.url, model_name="gpt-6-luna")
            keyed.script(Reply(text="through the proxy"))
            env = {"HTTP_PROXY": proxy.url, "http_proxy": proxy.url, "NO_PROXY": "", "no_proxy": ""}
            with Harness([settings], env=env) as harness:
                assert say(harness, "hi", "telegram:proxy") == (200, "through the proxy")
            path, headers = proxy.seen[-1]
            assert path == "http://api.openai.com/v1/chat/completions"
            assert "authorization" not in headers and "x-api-key" not in headers
            assert keyed.requests[-1].headers["authorization"] == "Bearer sk-only-the-proxy-has-this"
            assert keyed.requests[-1].json["model"] == "gpt-6-luna"


def test_a_harness_holding_its_own_key_sends_it_as_its_provider_asks(tmp_path: Path) -> None:
    """Keys not wired (lnk agent keys wire off): the settings hand the harness its key, and it sends
    it in its provider's header; a provider checking the key answers."""
    with StandInProvider(key="sk-held-by-the-harness") as keyed:
        for number, (provider, model_name) in enumerate((("openai", "gpt-6-luna"), ("anthropic", "claude-sonnet-5-5"))):
            settings = settings_for(tmp_path / provider, MAIN, keyed.url, provider=provider, model_name=model_name)
            assert settings.model is not None
            settings.model.key = "sk-held-by-the-harness"
            keyed.script(Reply(text=f"held {provider}"))
            with Harness([settings]) as harness:
                assert say(harness, "hi", f"telegram:held{number}") == (200, f"held {provider}")
            header = PROVIDERS[provider].key_header.lower()
            assert keyed.requests[-1].headers[header] == PROVIDERS[provider].key_prefix + "sk-held-by-the-harness"


def test_a_model_that_fails_says_so_and_loses_nothing(tmp_path: Path, provider: StandInProvider) -> None:
    provider.script(Reply(status=529, error="overloaded"), Reply(text="better now"))
    with Harness([settings_for(tmp_path, MAIN, provider.url)]) as harness:

        async def failing() -> str:
            async with harness.client().chat("are you there?", wire.Thread.parse("kit:fail")) as reply:
                return await reply.text()

        try:
            asyncio.run(failing())
        except Exception as exc:
            assert "529" in str(exc) and "overloaded" in str(exc)
        else:
            raise AssertionError("the failure was not said")
        assert say(harness, "now?", "kit:fail") == (200, "better now")
        shown = [m["content"] for m in provider.requests[-1].json["messages"][1:]]
        assert shown == ["are you there?", "now?"], "the message the model never answered is still there"


def test_a_message_sent_the_moment_a_failure_is_said_gets_a_turn_of_its_own(
    tmp_path: Path, provider: StandInProvider
) -> None:
    """Once a failed turn's error reaches its request, the turn takes no more messages: the next one,
    sent that very moment (its request still open), is answered on its own request, never joined
    (202) to the turn that has answered and then left unanswered."""
    settings = settings_for(tmp_path, MAIN, provider.url)
    lease = Conversation(Path(settings.folders.chats), wire.Thread.parse("kit:edge"), settings.turns).lease
    with Harness([settings]) as harness:

        async def fail_then_ask(number: int) -> tuple[int, str]:
            async with harness.client().chat(f"fail {number}", wire.Thread.parse("kit:edge")) as failing:
                with pytest.raises(Exception, match="529"):
                    await failing.text()
                with lease.locked():
                    running = lease.read()
                assert running is None or running.closing, "a turn that has answered still takes messages"
                return await ask(harness.client(), f"ask {number}", "kit:edge")

        for number in range(8):
            provider.script(Reply(status=529, error="overloaded"), Reply(text=f"answer {number}"))
            assert asyncio.run(fail_then_ask(number)) == (200, f"answer {number}")


def test_a_model_over_tls_answers_only_for_a_certificate_of_its_name_that_its_authorities_signed(
    tmp_path: Path,
) -> None:
    """As with wired keys off, where the harness speaks TLS to the provider itself: the certificate
    is verified against the authorities httpx trusts (SSL_CERT_FILE here, a test's own CA), and the
    name it was issued for is checked, even though those authorities are read only at the first
    handshake."""
    authority = trustme.CA()
    trusted = tmp_path / "authority.pem"
    authority.cert_pem.write_to_path(str(trusted))
    for name, issued_for in (("right", "127.0.0.1"), ("wrong", "localhost")):
        certificate = tmp_path / f"{name}.pem"
        authority.issue_cert(issued_for).private_key_and_cert_chain_pem.write_to_path(str(certificate))
        with StandInProvider(certificate=certificate) as served:
            assert served.url.startswith("https://127.0.0.1:")
            served.script(Reply(text="over TLS"))
            for trust in (str(trusted), ""):  # the test's CA, then certifi's bundle, which doesn't hold it
                settings = settings_for(tmp_path / f"{name}{bool(trust)}", MAIN, served.url)
                with Harness([settings], env={"SSL_CERT_FILE": trust, "SSL_CERT_DIR": ""}) as harness:
                    thread = wire.Thread(channel="telegram", chat=f"tls{name}{bool(trust)}")
                    if name == "right" and trust:
                        assert say(harness, "hi", str(thread)) == (200, "over TLS")
                        continue

                    async def refused(thread: wire.Thread = thread) -> str:
                        async with harness.client().chat("hi", thread) as reply:
                            return await reply.text()

                    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED") as failed:
                        asyncio.run(refused())
                    reason = "address mismatch" if trust else "unable to get local issuer certificate"
                    assert reason in str(failed.value)
            assert len(served.requests) == (name == "right"), "the model is asked only over a verified connection"
