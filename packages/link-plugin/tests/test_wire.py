"""Headers, threads and the proof, as a harness endpoint and a bridge read them."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from link_plugin import proof, wire


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


ANSWERS = [
    b'{"proof": "ab12"}',
    b'{"proof": "ab12", "from_a_newer_harness": [1, 2]}',
    b'{"proof": ""}',
    b'{"proof": 12}',
    b'{"proof": null}',
    b'{"proof": ["ab12"]}',
    b'{"other": "ab12"}',
    b'["ab12"]',
    b'"ab12"',
    b"",
    b"not json",
    b'{"proof": "\xff"}',
    '{"proof": "ab12"}'.encode("utf-16"),
]


@pytest.mark.parametrize("raw", ANSWERS)
def test_the_client_reads_a_proof_answer_as_its_model_does(raw: bytes) -> None:
    try:
        expected: str | None = wire.ProofAnswer.model_validate_json(raw).proof
    except ValidationError:
        expected = None
    assert proof.answered_proof(raw) == expected


def test_the_client_writes_a_challenge_as_its_model_does() -> None:
    challenge = proof.new_challenge()
    body = proof.request_body(challenge)
    assert body == wire.ProofRequest(challenge=challenge).model_dump_json().encode()
    assert wire.ProofRequest.model_validate_json(body).challenge == challenge


def test_a_client_of_an_endpoint_loads_no_model() -> None:
    """What `lnk agent chat -m` loads to send a message and ask what waits for the owner."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from link_plugin import endpoint, control; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "'link_plugin.control'" in done.stdout and "pydantic" not in done.stdout
