"""The endpoint's doors: the key, the proof, the agent, the conversation, and what a bad request gets."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import MAIN
from helpers import Harness, kinds, say, settings_for, wait_until

from link_conformance.provider import Reply, StandInProvider
from link_plugin import wire
from link_plugin.harness import AgentRef


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, provider: StandInProvider) -> Iterator[Harness]:
    with Harness([settings_for(tmp_path_factory.mktemp("endpoint"), MAIN, provider.url)]) as harness:
        yield harness


def post(harness: Harness, headers: dict[str, str], body: object, path: str = "/v1/chat/completions") -> httpx.Response:
    return httpx.post(harness.origin + path, headers=headers, json=body, timeout=10)


HELLO = {"model": "link", "messages": [{"role": "user", "content": "hello"}]}


def untouched(provider: StandInProvider, before: int) -> bool:
    time.sleep(0.2)
    return len(provider.requests) == before


def test_no_key_no_answer(harness: Harness, provider: StandInProvider) -> None:
    before = len(provider.requests)
    for authorization in (None, "Bearer wrong", f"Basic {harness.main.endpoint_key}"):
        headers = harness.headers(**{wire.THREAD: "kit:nokey"})
        if authorization is None:
            del headers["Authorization"]
        else:
            headers["Authorization"] = authorization
        response = post(harness, headers, HELLO)
        assert response.status_code == 401, authorization
        assert "key" in response.json()["error"]["message"]
    assert untouched(provider, before)
    assert not harness.conversation("kit:nokey").exists(), "nothing is kept from a request without the key"
    models = httpx.get(harness.origin + "/v1/models", headers={wire.AGENT: "main"}, timeout=5)
    assert models.status_code == 401


def test_the_proof_is_a_signature_never_the_key(harness: Harness) -> None:
    key = harness.main.endpoint_key or ""
    challenge = wire.new_challenge()
    headers = {wire.AGENT: MAIN.name, wire.AGENT_ID: MAIN.id}
    response = post(harness, headers, {"challenge": challenge}, wire.PROOF_PATH)
    assert response.status_code == 200
    assert key not in response.text and key not in str(response.headers)
    assert wire.proof_holds(key, challenge, response.json()["proof"])
    bad = post(harness, headers, {"challenge": "short"}, wire.PROOF_PATH)
    assert bad.status_code == 400 and "challenge" in bad.json()["error"]["message"]


def test_an_agent_it_doesnt_run_is_refused_before_the_model(harness: Harness, provider: StandInProvider) -> None:
    before = len(provider.requests)
    headers = harness.headers(**{wire.AGENT_ID: "zzzzzzzzzzzz", wire.THREAD: "kit:stranger"})
    response = post(harness, headers, HELLO)
    assert response.status_code == 404
    proof = post(harness, headers, {"challenge": wire.new_challenge()}, wire.PROOF_PATH)
    assert proof.status_code == 404
    same_id_other_name = harness.headers(**{wire.AGENT: "work", wire.THREAD: "kit:stranger"})
    assert post(harness, same_id_other_name, HELLO).status_code == 404
    assert untouched(provider, before)


def test_a_call_naming_no_conversation_is_refused(harness: Harness, provider: StandInProvider) -> None:
    before = len(provider.requests)
    kept = set(harness.chats.iterdir())
    response = post(harness, harness.headers(), HELLO)
    assert response.status_code == 400
    assert wire.THREAD in response.json()["error"]["message"]
    assert untouched(provider, before)
    assert set(harness.chats.iterdir()) == kept, "nothing was kept for it"


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({wire.THREAD: "no colon"}, wire.THREAD),
        ({wire.THREAD: "UPPER:1"}, wire.THREAD),
        ({wire.THREAD: "telegram:../../etc"}, wire.THREAD),
        ({wire.THREAD: "kit:bad", wire.TOOLS: "ok, not ok"}, wire.TOOLS),
        ({wire.THREAD: "kit:bad", wire.FROM: "bob", wire.HOPS: "many"}, wire.HOPS),
    ],
)
def test_headers_that_dont_parse_are_refused(
    harness: Harness, provider: StandInProvider, extra: dict[str, str], says: str
) -> None:
    before = len(provider.requests)
    response = post(harness, harness.headers(**extra), HELLO)
    assert response.status_code == 400
    assert says in response.json()["error"]["message"]
    assert untouched(provider, before)
    assert not (harness.chats.parent / "etc").exists()


@pytest.mark.parametrize(
    "body",
    [
        {"model": "link", "messages": []},
        {"model": "link", "messages": [{"role": "assistant", "content": "I spoke last"}]},
        {"model": "link", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
        {"messages": "hello"},
    ],
)
def test_a_body_that_isnt_one_new_message_is_refused(harness: Harness, body: object) -> None:
    response = post(harness, harness.headers(**{wire.THREAD: "kit:body"}), body)
    assert response.status_code == 400
    assert response.json()["error"]["message"]
    assert not harness.conversation("kit:body").exists()


def test_a_whole_answer_in_openai_shape(harness: Harness, provider: StandInProvider) -> None:
    provider.script(Reply(text="Whole, not streamed."))
    response = post(harness, harness.headers(**{wire.THREAD: "kit:whole"}), HELLO)
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "Whole, not streamed."}
    folder = harness.conversation("kit:whole")
    wait_until(lambda: kinds(folder) == ["message", "output", "answer", "delivered"])


def test_only_the_new_message_is_taken(harness: Harness, provider: StandInProvider) -> None:
    """A client that sends history too gets it ignored: the conversation is the harness's to remember."""
    provider.script(Reply(text="one"), Reply(text="two"))
    say(harness, "first thing", "kit:history")
    body = {
        "model": "link",
        "messages": [{"role": "user", "content": "a forged past"}, {"role": "user", "content": "second thing"}],
    }
    assert post(harness, harness.headers(**{wire.THREAD: "kit:history"}), body).status_code == 200
    shown = provider.requests[-1].json["messages"]
    assert [m["content"] for m in shown[1:]] == ["first thing", "one", "second thing"]


def test_models_and_health(harness: Harness) -> None:
    models = httpx.get(harness.origin + "/v1/models", headers=harness.headers(), timeout=5)
    assert models.status_code == 200 and models.json()["data"][0]["id"] == "link"
    health = httpx.get(harness.origin + "/_link/health", headers={wire.AGENT: "main", wire.AGENT_ID: MAIN.id})
    assert health.status_code == 200 and health.json() == {"ok": True}
    other = AgentRef(name="main", id="otheragent01", owner="bo@laptop")
    stranger = httpx.get(harness.origin + "/_link/health", headers={wire.AGENT: other.name, wire.AGENT_ID: other.id})
    assert stranger.status_code == 404


def test_recover_takes_the_key(harness: Harness) -> None:
    headers = {wire.AGENT: MAIN.name, wire.AGENT_ID: MAIN.id}
    assert httpx.get(harness.origin + wire.RECOVER_PATH, headers=headers, timeout=5).status_code == 401
    confirm = httpx.post(harness.origin + wire.RECOVER_PATH, headers=headers, json={"sent": ["x/1"]}, timeout=5)
    assert confirm.status_code == 401
    keyed = harness.headers()
    unknown = httpx.post(harness.origin + wire.RECOVER_PATH, headers=keyed, json={"sent": ["kit:none/9", "../x"]})
    assert unknown.json() == {"sent": [], "unknown": ["kit:none/9", "../x"]}


def test_the_model_is_called_with_no_key(harness: Harness, provider: StandInProvider) -> None:
    provider.script(Reply(text="keyless"))
    say(harness, "hi", "kit:keyless")
    headers = {k.lower() for k in provider.requests[-1].headers}
    assert "authorization" not in headers and "x-api-key" not in headers


def test_the_process_starts_only_with_a_model_and_a_key(tmp_path: Path, provider: StandInProvider) -> None:
    settings = settings_for(tmp_path, MAIN, provider.url)
    settings.endpoint_key = None
    harness = Harness([settings])
    with pytest.raises(AssertionError, match="exited"):
        harness.start()
    assert "endpoint_key" in harness.output()


def test_a_request_naming_no_agent_is_the_own_agents(harness: Harness, provider: StandInProvider) -> None:
    provider.script(Reply(text="as main"))
    headers = {"Authorization": f"Bearer {harness.main.endpoint_key}", wire.THREAD: "kit:unnamed"}
    response = post(harness, headers, HELLO)
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "as main"
