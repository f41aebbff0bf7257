"""One process answers for several agents of several owners, each keyed by its ID and owner."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
from helpers import Harness, ask, events, settings_for, wait_until

from link_conformance.provider import Reply, StandInProvider
from link_plugin import wire
from link_plugin.harness import AgentRef

ANA = AgentRef(name="main", id="anamainagent", owner="ana@laptop")
BO = AgentRef(name="main", id="bomainagent1", owner="github-4242")


def test_one_process_two_owners_main(tmp_path: Path, provider: StandInProvider) -> None:
    ana = settings_for(tmp_path, ANA, provider.url)
    bo = settings_for(tmp_path, BO, provider.url)
    (Path(ana.folders.home) / "instructions" / "style.md").write_text("Answer Ana in Portuguese.")
    (Path(bo.folders.home) / "instructions" / "style.md").write_text("Answer Bo in Danish.")
    provider.script(Reply(text="Olá Ana"), Reply(text="Hej Bo"))
    with Harness([ana, bo]) as harness:
        first = asyncio.run(ask(harness.client(ana), "hello", "telegram:7"))
        asked_ana = provider.requests[-1]
        second = asyncio.run(ask(harness.client(bo), "hello", "telegram:7"))
        asked_bo = provider.requests[-1]
        assert first == (200, "Olá Ana") and second == (200, "Hej Bo")

        assert "Portuguese" in asked_ana.text and "Danish" not in asked_ana.text
        assert "Danish" in asked_bo.text and "Portuguese" not in asked_bo.text
        assert "Olá Ana" not in asked_bo.text, "Bo's main never sees Ana's conversation"
        assert [e["text"] for e in events(harness.conversation("telegram:7", ana)) if e["kind"] == "message"] == [
            "hello"
        ]
        bos = harness.conversation("telegram:7", bo)
        wait_until(lambda: [e["kind"] for e in events(bos)] == ["message", "output", "answer", "delivered"])

        # Ana's key opens nothing of Bo's, even naming Bo's agent.
        headers = {**harness.headers(bo), "Authorization": f"Bearer {ana.endpoint_key}", wire.THREAD: "telegram:7"}
        body = {"model": "link", "messages": [{"role": "user", "content": "hi"}]}
        response = httpx.post(f"{harness.origin}/v1/chat/completions", headers=headers, json=body, timeout=5)
        assert response.status_code == 404
        recover = httpx.get(f"{harness.origin}{wire.RECOVER_PATH}", headers={**headers}, timeout=5)
        assert recover.status_code == 404

        # Each proof is made with that agent's own key.
        for settings in (ana, bo):
            challenge = wire.new_challenge()
            proof = httpx.post(
                f"{harness.origin}{wire.PROOF_PATH}",
                headers={wire.AGENT: settings.agent.name, wire.AGENT_ID: settings.agent.id},
                json={"challenge": challenge},
                timeout=5,
            ).json()["proof"]
            assert wire.proof_holds(settings.endpoint_key or "", challenge, proof)

        # Naming no agent is refused when the process answers for more than one.
        anonymous = {"Authorization": f"Bearer {ana.endpoint_key}", wire.THREAD: "telegram:7"}
        response = httpx.post(f"{harness.origin}/v1/chat/completions", headers=anonymous, json=body, timeout=5)
        assert response.status_code == 400 and wire.AGENT in response.json()["error"]["message"]


def test_two_agents_sharing_a_folder_are_refused(tmp_path: Path, provider: StandInProvider) -> None:
    ana = settings_for(tmp_path, ANA, provider.url)
    twin = ana.model_copy(update={"agent": AgentRef(name="work", id="anaworkagent", owner=ANA.owner)}, deep=True)
    twin.folders.harness_home = str(tmp_path / "twin")
    Path(twin.folders.harness_home).mkdir()
    harness = Harness([ana, twin])
    try:
        harness.start()
    except AssertionError:
        pass
    else:
        harness.stop()
        raise AssertionError("two agents with one chats folder were served")
    assert "a folder of its own" in harness.output()
