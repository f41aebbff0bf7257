"""Headers, threads and the proof, as a harness endpoint and a bridge read them."""

from __future__ import annotations

import pytest

from link_plugin import wire


def test_thread_parses_channel_and_chat() -> None:
    thread = wire.Thread.parse("telegram:-100123")
    assert (thread.channel, thread.chat) == ("telegram", "-100123")
    assert str(thread) == "telegram:-100123"


@pytest.mark.parametrize(
    "value", ["telegram", ":123", "Telegram:1", "telegram:../../etc", "telegram:a/b", "slack:", "x:" + "1" * 200]
)
def test_thread_refuses_what_could_leave_its_folder(value: str) -> None:
    with pytest.raises(wire.WireError, match="Link-Thread"):
        wire.Thread.parse(value)


def test_tools_narrow_then_only_intersect() -> None:
    first = wire.narrow(None, wire.parse_tools("alpha, beta"))
    assert first == {"alpha", "beta"}
    assert wire.narrow(first, wire.parse_tools("beta,gamma")) == {"beta"}
    assert wire.narrow(frozenset({"beta"}), wire.parse_tools("alpha,beta,gamma")) == {"beta"}


def test_tools_refuse_odd_names() -> None:
    with pytest.raises(wire.WireError):
        wire.parse_tools("alpha, be ta")


def test_request_headers_from_someone_else() -> None:
    headers = wire.RequestHeaders.parse(
        {
            "link-agent": "main",
            "link-agent-id": "abcdefabcdef",
            "link-thread": "slack:D1",
            "link-from": "scheduler",
            "link-hops": "2",
            "link-tools": "memory-abcdefabcdef",
        }
    )
    assert headers.agent == "main" and headers.agent_id == "abcdefabcdef"
    assert headers.sender == wire.Sender(who="scheduler", hops=2)
    assert headers.tools == {"memory-abcdefabcdef"}


def test_hops_must_be_a_count() -> None:
    with pytest.raises(wire.WireError, match="Link-Hops"):
        wire.RequestHeaders.parse({"Link-From": "x", "Link-Hops": "-1"})


def test_proof_is_the_hmac_and_never_the_key() -> None:
    key = wire.new_endpoint_key()
    challenge = wire.new_challenge()
    answer = wire.prove(key, challenge)
    assert key not in answer
    assert wire.proof_holds(key, challenge, answer)
    assert not wire.proof_holds(key, wire.new_challenge(), answer)
    assert not wire.proof_holds(wire.new_endpoint_key(), challenge, answer)
    assert not wire.proof_holds(key, challenge, key)


def test_proof_request_takes_only_a_full_challenge() -> None:
    with pytest.raises(ValueError):
        wire.ProofRequest(challenge="abc")


def test_a_message_key_is_parsed_or_refused() -> None:
    headers = wire.RequestHeaders.parse({"Link-Message-Id": "telegram:update=123456789@bot+1"})
    assert headers.message_id == "telegram:update=123456789@bot+1"
    assert wire.RequestHeaders.parse({}).message_id is None, "none sent: every message is kept, as before"
    for bad in ("", "two words", "a/b", "x" * 129, "é"):
        with pytest.raises(wire.WireError, match="Link-Message-Id"):
            wire.RequestHeaders.parse({"link-message-id": bad})
