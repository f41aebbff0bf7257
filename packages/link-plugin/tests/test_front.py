"""The front an adapter puts before a harness that speaks only OpenAI chat completions, spoken to
by the bridge's own client over a stand-in for the harness (an OpenAI-compatible server that
records every request): the proof, the key and the agent checked before the harness sees
anything, each conversation one session, others' messages prefixed, the hop cap, steering."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from link_conformance.provider import Reply, StandInProvider
from link_conformance.running import free_block
from link_plugin import front, wire
from link_plugin.channel import EndpointRef
from link_plugin.contract import CONTRACT_VERSION
from link_plugin.endpoint import EndpointClient, EndpointRefused
from link_plugin.harness import AgentFolders, AgentRef, HarnessSettings, ModelRef

AGENT = AgentRef(name="main", id="frontagent12", owner="ana@laptop")
KEY = "endpoint-key-0123456789"
UPSTREAM_KEY = "upstream-key-made-at-start"
SESSION = "X-Harness-Session"

# The front as an adapter's `start` runs it: the harness (here a process that only sleeps, with
# the stand-in answering for it) started to die with the front, the front serving before it.
_RUN = """
import sys
from link_plugin import front
settings, port = front.given()
upstream = front.Upstream(name="Harness", url=sys.argv[1], key=sys.argv[2], model="harness-agent",
                          session_header=sys.argv[3], health="/v1/models")
process = front.spawn([sys.executable, "-c", "import time; time.sleep(600)"], env={}, cwd="/")
sys.exit(front.serve(settings, port, upstream, process))
"""


class Running:
    def __init__(
        self, provider: StandInProvider, model: StandInProvider, process: subprocess.Popen[bytes], port: int
    ) -> None:
        self.provider = provider
        self.model = model
        self.relay = front.model_relay(port)
        self.process = process
        self.url = f"http://127.0.0.1:{port}/v1"
        self.client = EndpointClient(EndpointRef(url=self.url, key=KEY), AGENT, timeout=30)

    def say(self, text: str, thread: str = "telegram:42", sender: wire.Sender | None = None) -> tuple[int, str]:
        async def go() -> tuple[int, str]:
            async with self.client.chat(text, wire.Thread.parse(thread), sender=sender) as reply:
                return reply.status, await reply.text()

        return asyncio.run(go())


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    port = free_block(1)
    model = StandInProvider().start()  # the model the relay reaches
    model_url = model.url
    settings = HarnessSettings(
        contract=CONTRACT_VERSION,
        agent=AGENT,
        folders=AgentFolders(agent=str(tmp_path), home=str(tmp_path), chats=str(tmp_path), harness_home=str(tmp_path)),
        ports=[port],
        endpoint_key=KEY,
        hops=2,
        model=ModelRef(name="gpt-6-luna", provider="openai", url=model_url),
    )
    (tmp_path / "settings.json").write_text(settings.model_dump_json())
    env = {**os.environ, "LNK_SETTINGS": str(tmp_path / "settings.json"), "LNK_PORT": str(port)}
    with StandInProvider(key=UPSTREAM_KEY) as provider:
        process = subprocess.Popen([sys.executable, "-c", _RUN, provider.origin, UPSTREAM_KEY, SESSION], env=env)
        try:
            deadline = time.monotonic() + 30
            while not _listens(port):
                assert process.poll() is None and time.monotonic() < deadline, "the front didn't start"
                time.sleep(0.1)
            yield Running(provider, model, process, port)
        finally:
            process.terminate()
            process.wait(timeout=10)
            model.stop()


def _listens(port: int) -> bool:
    try:
        httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
    except httpx.HTTPError:
        return False
    return True


def test_the_bridge_proves_the_front_and_each_conversation_is_one_session(running: Running) -> None:
    assert asyncio.run(running.client.prove()).holds
    assert running.say("hi") == (200, "ok")
    assert running.say("and again") == (200, "ok")
    assert running.say("elsewhere", thread="slack:T1") == (200, "ok")
    first, second, other = running.provider.requests
    assert first.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"  # the harness's key, never the endpoint's
    assert first.json["model"] == "harness-agent" and first.json["messages"] == [{"role": "user", "content": "hi"}]
    assert (
        first.headers[SESSION.lower()] == second.headers[SESSION.lower()] == front.session_id(AGENT.id, "telegram:42")
    )
    assert other.headers[SESSION.lower()] == front.session_id(AGENT.id, "slack:T1") != first.headers[SESSION.lower()]


def test_no_key_or_another_agent_is_refused_before_the_harness_sees_it(running: Running) -> None:
    body = {"model": "link", "messages": [{"role": "user", "content": "hi"}]}
    ours = {wire.AGENT: AGENT.name, wire.AGENT_ID: AGENT.id, wire.THREAD: "telegram:42"}
    chat = f"{running.url}/chat/completions"
    assert httpx.post(chat, json=body, headers=ours).status_code == 401
    wrong = {**ours, "Authorization": "Bearer not-the-key"}
    assert httpx.post(chat, json=body, headers=wrong).status_code == 401
    stranger = {**ours, "Authorization": f"Bearer {KEY}", wire.AGENT_ID: "someoneelse1"}
    assert httpx.post(chat, json=body, headers=stranger).status_code == 404
    proof = httpx.post(f"{running.url.removesuffix('/v1')}{wire.PROOF_PATH}", json={"challenge": "ab" * 32})
    assert proof.status_code == 404  # no agent named: no proof
    assert running.provider.requests == []


def test_others_messages_are_prefixed_and_the_hop_cap_holds(running: Running) -> None:
    assert running.say("lunch?", sender=wire.Sender(who="bea", hops=1)) == (200, "ok")
    assert running.provider.requests[-1].json["messages"][-1]["content"] == "(from bea) lunch?"
    with pytest.raises(EndpointRefused) as refused:
        running.say("loop", sender=wire.Sender(who="bot", hops=3))
    assert refused.value.status == 403
    assert len(running.provider.requests) == 1


def test_a_message_sent_mid_turn_joins_it_and_is_answered_on_the_same_stream(running: Running) -> None:
    hold = threading.Event()
    running.provider.script(Reply(text="first", hold=hold), Reply(text=" second"))
    answers: list[tuple[int, str]] = []
    turn = threading.Thread(target=lambda: answers.append(running.say("start the report")))
    turn.start()
    running.provider.wait_for_requests(1)
    status, text = running.say("add the totals")
    assert status == 202 and text == ""
    hold.set()
    turn.join(timeout=30)
    assert answers == [(200, "first second")]
    first, joined = running.provider.requests
    assert joined.json["messages"] == [{"role": "user", "content": "add the totals"}]
    assert joined.headers[SESSION.lower()] == first.headers[SESSION.lower()]


def test_a_harness_that_fails_is_said_and_the_front_goes_when_the_harness_does(running: Running) -> None:
    running.provider.script(Reply(status=500, error="model overloaded"))
    status, text = running.say("hi")
    assert status == 200 and "Harness answered 500" in text
    (harness,) = [
        int(pid) for pid in Path(f"/proc/{running.process.pid}/task/{running.process.pid}/children").read_text().split()
    ]
    os.kill(harness, 9)
    assert running.process.wait(timeout=15) is not None
    assert json.dumps(running.provider.requests[-1].json).count("hi") == 1


def test_the_harness_goes_when_the_front_is_killed_outright(running: Running) -> None:
    pid = running.process.pid
    (harness,) = [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    os.kill(pid, 9)
    running.process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{harness}").exists() and _state(harness) != "Z":
        assert time.monotonic() < deadline, "the harness outlived its front"
        time.sleep(0.1)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "Z"


def test_the_model_relay_takes_only_its_key_and_passes_no_key_on(running: Running) -> None:
    body = {"model": "gpt-6-luna", "messages": [{"role": "user", "content": "hi"}]}
    assert httpx.post(f"{running.relay}/chat/completions", json=body).status_code == 401
    wrong = {"Authorization": f"Bearer {KEY}"}  # the endpoint's key is not the relay's
    assert httpx.post(f"{running.relay}/chat/completions", json=body, headers=wrong).status_code == 401
    assert running.model.requests == []
    given = {"Authorization": f"Bearer {UPSTREAM_KEY}"}
    answer = httpx.post(f"{running.relay}/chat/completions", json=body, headers=given, timeout=30)
    assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"] == "ok"
    (relayed,) = running.model.requests
    assert relayed.path == "/v1/chat/completions" and relayed.json == body
    assert "authorization" not in relayed.headers  # the sandbox's proxy adds the model's key
    streamed = httpx.post(f"{running.relay}/chat/completions", json={**body, "stream": True}, headers=given)
    assert streamed.headers["content-type"].startswith("text/event-stream") and "data: [DONE]" in streamed.text
