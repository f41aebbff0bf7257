"""The conformance suites. A plugin's own test file subclasses the one for its kind:

    from link_conformance.suites import HarnessConformance

    class TestMine(HarnessConformance):
        plugin = "lnk-mine"

or runs them all against an executable: `pytest --pyargs link_conformance --lnk-plugin lnk-mine`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from link_conformance.completions import Answered, message, send
from link_conformance.fakes import FakeEndpoint, Message
from link_conformance.provider import Reply, StandInProvider, ToolCall
from link_conformance.rules import broken
from link_conformance.running import RunningHarness
from link_conformance.tools import StandInTools
from link_plugin import harness, memory, wire
from link_plugin.calls import PluginProgram
from link_plugin.channel import BridgeSpec, Describe, EndpointRef
from link_plugin.commands import TABLES
from link_plugin.contract import CONTRACT_VERSION, Contract, Kind
from link_plugin.endpoint import EndpointClient
from link_plugin.errors import ExitCode, LinkError
from link_plugin.harness import AgentRef
from link_plugin.layout import AgentFolder
from link_plugin.waits import within

TURN_PREPARED = 180.0
"""Seconds a harness may take from a message to its first request to the model (one just started
finishes starting first: the front of lnk-hermes and lnk-openclaw answers before its harness does)."""


def _executable(request: pytest.FixtureRequest) -> str:
    plugin = getattr(request.cls, "plugin", None) or request.config.getoption("--lnk-plugin")
    if not plugin:
        pytest.skip("no plugin to check: pass --lnk-plugin lnk-<name>")
    return str(plugin)


def _contract(executable: str) -> Contract:
    try:
        return PluginProgram(executable).contract()
    except LinkError as exc:
        raise AssertionError(broken("contract", str(exc))) from exc


class _Suite:
    kind: ClassVar[Kind]
    plugin: ClassVar[str | None] = None

    @pytest.fixture(scope="class")
    @classmethod
    def executable(cls, request: pytest.FixtureRequest) -> str:
        executable = _executable(request)
        kind = _contract(executable).kind
        if kind != cls.kind:
            pytest.skip(f"{executable} is a {kind.value} plugin, not a {cls.kind.value}")
        return executable

    @pytest.fixture(scope="class")
    @classmethod
    def program(cls, executable: str) -> PluginProgram:
        return PluginProgram(executable)

    def test_contract(self, executable: str) -> None:
        answer = _contract(executable)
        assert answer.version >= 1, broken("contract", f"it said version {answer.version}")
        assert answer.name, broken("contract", "it gave no name")


class HarnessConformance(_Suite):
    kind = Kind.HARNESS

    @pytest.fixture(scope="class")
    @classmethod
    def provider(cls) -> Iterator[StandInProvider]:
        with StandInProvider() as provider:
            yield provider

    @pytest.fixture(scope="class")
    @classmethod
    def tools(cls) -> Iterator[StandInTools]:
        with StandInTools() as tools:
            yield tools

    @pytest.fixture(scope="class")
    @classmethod
    def running(
        cls,
        executable: str,
        provider: StandInProvider,
        tools: StandInTools,
        tmp_path_factory: pytest.TempPathFactory,
    ) -> Iterator[RunningHarness]:
        root = tmp_path_factory.mktemp("harness")
        running = RunningHarness(executable, root, model_url=provider.url, tools=tools.addresses)
        try:
            running.start()
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n--- harness output ---\n{running.output()[-3000:]}") from exc
        yield running
        running.stop()

    @pytest.fixture(autouse=True)
    def _own_script(self, executable: str, provider: StandInProvider) -> None:
        """Each check scripts the model for itself: what a failed one left queued is not the next's.
        (After `executable`, so a plugin of another kind skips before a provider starts.)"""
        provider.forget_script()

    @pytest.fixture(scope="class")
    @classmethod
    def endpoint(cls, running: RunningHarness) -> harness.Endpoint:
        endpoint = running.endpoint
        if endpoint is None:
            pytest.skip("the harness answers no endpoint: it speaks its channels itself")
        return endpoint

    def test_answers_validate(self, running: RunningHarness) -> None:
        for command in TABLES[Kind.HARNESS]:
            if command.name in {"contract", "start", "install", "configure", "link"}:
                continue
            try:
                answer = running.ask(command.name)
            except LinkError as exc:
                raise AssertionError(broken("answers", f"`{command.name}`: {exc}")) from exc
            assert answer is not None, broken("answers", f"`{command.name}` gave nothing")

    def test_describe_agrees_with_each_command(self, running: RunningHarness) -> None:
        port = {harness.ENV_PORT: str(running.first_port)}
        asked = running.program.run("describe", env=port)
        if asked.code in (ExitCode.NOT_ANSWERED, ExitCode.USAGE):
            pytest.skip("the adapter doesn't answer describe: Link asks each command on its own")
        try:
            description = running.program.ask_as(harness.Description, Kind.HARNESS, "describe", env=port)
        except LinkError as exc:
            raise AssertionError(broken("harness-describe", str(exc))) from exc
        assert "start" in description.answers, broken("harness-describe", "`start` is required, and not named")
        for name in harness.DESCRIBED:
            known = description.known(name)
            if known is not None:  # left out: Link asks the command itself, with the agent's settings
                answer = running.ask(name)
                assert known == answer, broken("harness-describe", f"it says `{name}` answers {known}, not {answer}")
        for command in TABLES[Kind.HARNESS]:
            name = command.name
            if name in ("contract", "describe") or (name in description.answers and name not in harness.DESCRIBED):
                continue  # a step it names is run by the checks of steps; one it doesn't is checked here
            args = ("telegram",) if command.args else ()  # `link <channel>`
            code = running.program.run(name, args, env=running.env).code
            answered = code in (ExitCode.ANSWERED, ExitCode.FAILED)
            said = "names" if name in description.answers else "doesn't name"
            assert answered == (name in description.answers), broken(
                "harness-describe", f"it {said} `{name}`, which exits {code}"
            )

    def test_install_and_configure(self, running: RunningHarness) -> None:
        for step in ("install", "configure"):
            answer = running.ask(step)
            assert isinstance(answer, harness.Done) and answer.ok, broken("steps", f"`{step}` said {answer}")

    def test_endpoint_streams(
        self, running: RunningHarness, endpoint: harness.Endpoint, provider: StandInProvider
    ) -> None:
        provider.script(Reply(text="The quick brown fox jumps over the lazy dog.", chunks=6, delay=0.02))

        async def ask() -> list[str]:
            client = EndpointClient(running.endpoint_ref(), running.agent)
            async with client.chat("hello", wire.Thread(channel="kit", chat="stream")) as reply:
                assert reply.status == 200, broken("streams", f"status {reply.status}")
                return [piece async for piece in reply.deltas()]

        pieces = asyncio.run(ask())
        assert "".join(pieces) == "The quick brown fox jumps over the lazy dog.", broken(
            "streams", f"got {''.join(pieces)!r}"
        )
        assert len(pieces) > 1, broken("streams", "the answer came in one piece")
        # The new turn: what follows the model's last answer (a harness may add its own context
        # after the owner's message, as OpenClaw does).
        messages = provider.requests[-1].json["messages"]
        answered = [i for i, message in enumerate(messages) if message.get("role") == "assistant"]
        turn = messages[answered[-1] + 1 :] if answered else messages
        shown = [message for message in turn if message.get("role") == "user"]
        assert "hello" in json.dumps(shown), broken("streams", "the model was not shown the new message")

    def _post(
        self, endpoint: harness.Endpoint, path: str, headers: dict[str, str], body: dict[str, Any]
    ) -> httpx.Response:
        origin = endpoint.url.split("/v1")[0].rstrip("/")
        return httpx.post(origin + path, headers=headers, json=body, timeout=10)

    def test_key_required(self, running: RunningHarness, endpoint: harness.Endpoint, provider: StandInProvider) -> None:
        before = len(provider.requests)
        response = self._post(
            endpoint,
            "/v1/chat/completions",
            {wire.AGENT: running.agent.name, wire.AGENT_ID: running.agent.id, wire.THREAD: "kit:nokey"},
            {"model": "link", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert response.status_code == 401, broken("key", f"status {response.status_code}")
        time.sleep(0.2)
        assert len(provider.requests) == before, broken("key", "the model was called anyway")

    def test_proof(self, running: RunningHarness, endpoint: harness.Endpoint) -> None:
        if not endpoint.proof:
            pytest.skip("the endpoint doesn't say it answers the proof")
        proof = asyncio.run(EndpointClient(running.endpoint_ref(), running.agent).prove())
        assert proof.status == 200, broken("proof", f"status {proof.status}")
        everything = proof.body.decode(errors="replace") + json.dumps(proof.headers)
        assert running.key not in everything, broken("proof", "the answer holds the endpoint key")
        assert proof.holds, broken("proof", f"answered {proof.body[:200]!r}")

    def test_unknown_agent_refused(
        self, running: RunningHarness, endpoint: harness.Endpoint, provider: StandInProvider
    ) -> None:
        if not endpoint.agent:
            pytest.skip("the endpoint doesn't say it answers as the agent Link-Agent names")
        before = len(provider.requests)
        headers = {
            "Authorization": f"Bearer {running.key}",
            wire.AGENT: "stranger",
            wire.AGENT_ID: "zzzzzzzzzzzz",
            wire.THREAD: "kit:stranger",
        }
        response = self._post(
            endpoint,
            "/v1/chat/completions",
            headers,
            {"model": "link", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert 400 <= response.status_code < 500, broken("agent", f"status {response.status_code}")
        if endpoint.proof:
            stranger = AgentRef(name="stranger", id="zzzzzzzzzzzz", owner=running.agent.owner)
            proof = asyncio.run(EndpointClient(running.endpoint_ref(), stranger).prove())
            assert proof.status != 200, broken("agent", "it proved itself for an agent it doesn't run")
        time.sleep(0.2)
        assert len(provider.requests) == before, broken("agent", "the model was called for it")

    def test_tools_narrow(
        self, running: RunningHarness, endpoint: harness.Endpoint, provider: StandInProvider, tools: StandInTools
    ) -> None:
        if not endpoint.tools:
            pytest.skip("the endpoint doesn't say it narrows tools")
        every = {StandInTools.tool_of(name) for name in tools.addresses}

        def offered(chat: str, narrowed: frozenset[str] | None) -> set[str]:
            count = len(provider.requests)

            async def ask() -> None:
                client = EndpointClient(running.endpoint_ref(), running.agent)
                async with client.chat("which tools?", wire.Thread(channel="kit", chat=chat), tools=narrowed) as reply:
                    await reply.text()

            asyncio.run(ask())
            return provider.wait_for_requests(count + 1)[count].tool_names & every

        # A harness may list its tools when a turn first needs them, and answer that turn without
        # the ones not listed yet: a conversation of the kit's own lets them be listed first.
        deadline = time.monotonic() + 30
        while offered("listing", None) != every and time.monotonic() < deadline:
            time.sleep(0.1)
        ping = StandInTools.tool_of
        first = offered("sub", frozenset({"alpha", "beta"}))
        assert first == {ping("alpha"), ping("beta")}, broken("tools", f"alpha,beta offered {first}")
        later = offered("sub", frozenset({"beta", "gamma"}))
        assert later == {ping("beta")}, broken("tools", f"a later beta,gamma offered {later}")
        none = offered("sub", None)
        assert none == {ping("beta")}, broken("tools", f"no header later offered {none}")
        whole = offered("parent", None)
        assert whole == every, broken("tools", f"a conversation never narrowed offered {whole}")

    def test_tools_are_told_the_conversation(
        self, running: RunningHarness, endpoint: harness.Endpoint, provider: StandInProvider, tools: StandInTools
    ) -> None:
        if not endpoint.tools:
            pytest.skip("the endpoint doesn't say it narrows tools")
        provider.script(Reply(tool_calls=[ToolCall(StandInTools.tool_of("alpha"), {})]), Reply(text="done"))
        before = len(tools.metas)

        async def ask() -> None:
            client = EndpointClient(running.endpoint_ref(), running.agent)
            sender = wire.Sender(who="kit:someone", hops=1)
            thread = wire.Thread(channel="kit", chat="told")
            async with client.chat("call alpha", thread, sender=sender, tools=frozenset({"alpha", "beta"})) as reply:
                await reply.text()

        asyncio.run(ask())
        assert len(tools.metas) > before, broken("told", "the tool was never called")
        meta = tools.metas[-1]
        said = meta.get(wire.META_TOOLS)
        assert isinstance(said, list) and sorted(said) == ["alpha", "beta"], broken("told", f"{wire.META_TOOLS} {said}")
        for key, value in ((wire.META_THREAD, "kit:told"), (wire.META_HOPS, 1)):
            assert meta.get(key, value) == value, broken("told", f"{key} was {meta.get(key)!r}, not {value!r}")

    def test_message_mid_turn_steers(
        self, running: RunningHarness, endpoint: harness.Endpoint, provider: StandInProvider
    ) -> None:
        hold = threading.Event()
        provider.script(Reply(text="first answer. ", hold=hold), Reply(text="after steering"))
        url, key, agent = endpoint.url, running.key, running.agent
        before = len(provider.requests)

        async def scenario() -> tuple[Answered, Answered, Answered]:
            first = asyncio.create_task(asyncio.to_thread(send, url, key, agent, "kit:steer", "first message"))
            # A harness may prepare a turn a while before it asks its model (OpenClaw: 10-30 s).
            await asyncio.to_thread(provider.wait_for_requests, before + 1, TURN_PREPARED)
            try:
                streamed = await asyncio.to_thread(send, url, key, agent, "kit:steer", "second message")
                whole = await asyncio.to_thread(send, url, key, agent, "kit:steer", "third message", stream=False)
            finally:
                hold.set()
            return await first, streamed, whole

        first, streamed, whole = asyncio.run(scenario())
        for form, steered in (("streamed", streamed), ("whole", whole)):
            assert steered.steered, broken("steer", f"a {form} message mid-turn got {steered.status} {steered.headers}")
            assert steered.complete and steered.text == "", broken(
                "steer", f"a {form} steered message's body is no empty completion: {steered.body[:300]!r}"
            )
        assert first.status == 200, broken("steer", f"the first request got {first.status}")
        later = [r for r in provider.requests[before + 1 :] if "second message" in r.text and "third message" in r.text]
        assert later, broken("steer", "the model never saw the steering messages")
        assert "after steering" in first.text, broken("steer", f"the first request's answer was {first.text!r}")
        if endpoint.once:
            ids = {streamed.answer_id, whole.answer_id}
            assert ids == {first.answer_id}, broken("answer-id", f"steered into {first.answer_id}, they named {ids}")

    @staticmethod
    def _once(endpoint: harness.Endpoint, running: RunningHarness) -> tuple[str, str, AgentRef]:
        """Where and as whom a check of what `once` promises sends; skipped for an endpoint without it."""
        if not endpoint.once:
            pytest.skip("the endpoint doesn't say `once` (a message kept once per key, every answer named)")
        return endpoint.url, running.key, running.agent

    def test_answer_id_names_the_answer(
        self, running: RunningHarness, endpoint: harness.Endpoint, provider: StandInProvider
    ) -> None:
        url, key, agent = self._once(endpoint, running)
        provider.script(Reply(text="Streamed, by its id.", chunks=3), Reply(text="Whole, by its id."))
        streamed = send(url, key, agent, "kit:ids", "stream it")
        whole = send(url, key, agent, "kit:ids", "all at once", stream=False)
        for form, answered in (("streamed", streamed), ("whole", whole)):
            assert answered.status == 200 and answered.answer_id, broken(
                "answer-id", f"a {form} answer's head: {answered.status} {answered.headers}"
            )
            assert set(answered.ids) == {answered.answer_id}, broken(
                "answer-id", f"a {form} answer named {answered.answer_id} carried the ids {sorted(set(answered.ids))}"
            )
        assert streamed.answer_id != whole.answer_id, broken("answer-id", "two answers had one id")

        # An answer whose request went away is recovered by the id its head gave.
        hold = threading.Event()
        provider.script(Reply(text="Kept for recovery.", hold=hold))
        before = len(provider.requests)
        headers, body = message(agent, key, "kit:ids", "then go away")
        with httpx.stream("POST", f"{url}/chat/completions", headers=headers, json=body, timeout=10) as response:
            head = response.headers.get(wire.ANSWER_ID)
            provider.wait_for_requests(before + 1)
        hold.set()
        client = EndpointClient(running.endpoint_ref(), agent)
        deadline = time.monotonic() + 30
        recovered: list[wire.Undelivered] = []
        while not recovered and time.monotonic() < deadline:
            recovered = [a for a in asyncio.run(client.recover()) if a.thread == "kit:ids"]
            time.sleep(0.1)
        assert [(a.id, a.content) for a in recovered] == [(head, "Kept for recovery.")], broken(
            "answer-id", f"the head named {head}; recover handed over {recovered}"
        )
        asyncio.run(client.confirm([a.id for a in recovered]))

    def test_message_kept_once(
        self, running: RunningHarness, endpoint: harness.Endpoint, provider: StandInProvider
    ) -> None:
        url, key, agent = self._once(endpoint, running)
        provider.script(Reply(text="Noted: 41."), Reply(text="You said 41."))
        first = send(url, key, agent, "kit:once", "my number is 41", message_id="kit-update-1")
        before = len(provider.requests)
        again = send(url, key, agent, "kit:once", "my number is 41", message_id="kit-update-1")
        assert (again.status, again.text, again.answer_id) == (first.status, first.text, first.answer_id), broken(
            "once",
            f"sent again, it was answered {again.status} {again.text!r} as {again.answer_id}, "
            f"first {first.status} {first.text!r} as {first.answer_id}",
        )
        time.sleep(0.2)
        assert len(provider.requests) == before, broken("once", "the model was asked again for a message sent again")
        send(url, key, agent, "kit:once", "what was my number?", message_id="kit-update-2")
        said = [m for m in provider.requests[-1].json["messages"] if "my number is 41" in json.dumps(m)]
        assert len(said) == 1, broken("once", f"the model was shown the message {len(said)} times")
        bad = send(url, key, agent, "kit:once", "hi", message_id="not a key!")
        assert bad.status == 400, broken("once", f"a malformed {wire.MESSAGE_ID} got {bad.status}")


class MemoryConformance(_Suite):
    kind = Kind.MEMORY

    @pytest.fixture(scope="class")
    @classmethod
    def folders(cls, tmp_path_factory: pytest.TempPathFactory) -> tuple[AgentFolder, Path]:
        root = tmp_path_factory.mktemp("memory")
        folder = AgentFolder(root / "agent")
        folder.create()
        folder.notes.write_text("- my sister is called Ana\n")
        (folder.memory / "lease.md").write_text("# Lease\n\nThe flat's lease ends in March.\n")
        state = folder.memory_state("kit")
        state.mkdir(parents=True)
        return folder, state

    def _env(self, notes: Path | None) -> dict[str, str]:
        env = {memory.ENV_AGENT_ID: "kitagent0001", memory.ENV_OWNER: "kit@conformance", memory.ENV_EMBEDDINGS: "none"}
        if notes is not None:
            env[memory.ENV_NOTES] = str(notes)
        return env

    def test_command_serves_mcp(self, program: PluginProgram, folders: tuple[AgentFolder, Path]) -> None:
        folder, state = folders
        try:
            answer = program.ask_as(
                memory.MemoryCommand,
                Kind.MEMORY,
                "command",
                (str(folder.root), str(state)),
                env=self._env(folder.notes),
            )
        except LinkError as exc:
            raise AssertionError(broken("memory-command", str(exc))) from exc

        async def listed() -> set[str]:
            server = StdioServerParameters(
                command=answer.argv[0], args=answer.argv[1:], env={**answer.env, "PATH": os.environ.get("PATH", "")}
            )
            async with Client(server, read_timeout_seconds=60) as client:
                return {tool.name for tool in (await client.list_tools()).tools}

        names = asyncio.run(within(listed(), 120))
        assert names, broken("memory-command", "the server lists no tools")
        missing = set(answer.no_ask) - names
        assert not missing, broken("memory-tools", f"no_ask names {sorted(missing)}, not among {sorted(names)}")

    def test_no_notes_when_none_named(self, program: PluginProgram, folders: tuple[AgentFolder, Path]) -> None:
        folder, state = folders
        answer = program.ask_as(
            memory.MemoryCommand, Kind.MEMORY, "command", (str(folder.root), str(state)), env=self._env(None)
        )
        assert answer.notes is None, broken("memory-notes", f"it claims {answer.notes}")


@dataclass(frozen=True)
class Said:
    """A message to the bot, as a channel's tests send it through their fake of its service."""

    text: str
    owner: bool = True
    """From the paired owner; False: from someone else."""
    group: bool = False
    """In a group (always the same one); False: in the sender's direct chat with the bot."""
    mention: bool = False
    """It mentions the bot, as the service marks a mention."""
    reply: bool = False
    """It replies to the bot's last message there."""


class ChannelConformance(_Suite):
    """The channel's checks. The bridge's checks that need a message from the service skip unless the
    channel's tests say how to send one (`say`) and what the bot shows (`shown`), through their fake."""

    kind = Kind.CHANNEL
    bridge_secrets: ClassVar[dict[str, str]] = {}
    """Secrets a bridge of this channel starts with (fake ones do: the kit never reaches the service)."""
    bridge_section: ClassVar[dict[str, Any]] = {}
    bridge_env: ClassVar[dict[str, str]] = {}
    bridge_wait: ClassVar[float] = 20.0

    def say(self, said: Said) -> None:
        """Send `said` to the bot through the fake service; the first message to a chat opens it."""
        pytest.skip("the channel's tests say no way to send the bot a message (ChannelConformance.say)")

    def shown(self, group: bool = False) -> list[str]:
        """What the bot shows now in the owner's direct chat (or in the group `say` uses), in order."""
        pytest.skip("the channel's tests say no way to see what the bot shows (ChannelConformance.shown)")

    def test_describe(self, program: PluginProgram) -> None:
        try:
            answer = program.ask_as(Describe, Kind.CHANNEL, "describe")
        except LinkError as exc:
            raise AssertionError(broken("describe", str(exc))) from exc
        names = [field.name for field in answer.secrets]
        assert answer.title, broken("describe", "no title")
        assert len(names) == len(set(names)), broken("describe", f"secret fields repeat: {names}")

    def _bridge(
        self, executable: str, endpoint: FakeEndpoint, key: str, folder: Path | None = None
    ) -> subprocess.Popen[str]:
        spec = BridgeSpec(
            contract=CONTRACT_VERSION,
            agent=AgentRef(name="main", id="kitagent0001", owner="kit@conformance"),
            endpoint=EndpointRef(url=f"{endpoint.origin}/v1", key=key),
            section=self.bridge_section,
            secrets=self.bridge_secrets,
            folder=str(folder) if folder else None,
        )
        process = subprocess.Popen(
            [executable, "bridge"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **self.bridge_env},
        )
        assert process.stdin is not None
        process.stdin.write(spec.model_dump_json() + "\n")
        process.stdin.close()
        return process

    @staticmethod
    def _end(process: subprocess.Popen[str]) -> None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()

    def _run_bridge(self, executable: str, honest: bool) -> tuple[FakeEndpoint, str]:
        key = wire.new_endpoint_key()
        endpoint = FakeEndpoint(key=key, honest=honest).start()
        process = self._bridge(executable, endpoint, key)
        try:
            if honest:
                endpoint.wait(lambda: wire.RECOVER_PATH in endpoint.keyed, self.bridge_wait)
            else:  # once the key reached it, waiting longer shows nothing more
                endpoint.wait(lambda: endpoint.proofs > 0 or endpoint.saw(key), self.bridge_wait)
            time.sleep(0.5 if honest else 2.0)
        finally:
            self._end(process)
            endpoint.stop()
        return endpoint, key

    @contextmanager
    def _carrying(
        self, executable: str, folder: Path | None = None, kept: list[wire.Undelivered] | None = None
    ) -> Iterator[FakeEndpoint]:
        """A bridge carrying to an endpoint that answers (and hands `kept` to recovery), once it
        asked recovery: it is ready."""
        key = wire.new_endpoint_key()
        endpoint = FakeEndpoint(key=key, honest=True, answers=True)
        endpoint.kept = list(kept or [])
        endpoint.start()
        process = self._bridge(executable, endpoint, key, folder)
        try:
            endpoint.wait(lambda: wire.RECOVER_PATH in endpoint.keyed, self.bridge_wait)
            yield endpoint
        finally:
            self._end(process)
            endpoint.stop()

    @staticmethod
    def _texts(endpoint: FakeEndpoint, text: str) -> list[Message]:
        """The messages the endpoint got that hold `text` (a bridge may take a mention out)."""
        return [carried for carried in endpoint.messages if text in carried.text]

    def _until(self, condition: Callable[[], object], rule: str, what: str) -> None:
        deadline = time.monotonic() + self.bridge_wait
        while not condition():
            assert time.monotonic() < deadline, broken(rule, f"{what} didn't happen within {self.bridge_wait:g} s")
            time.sleep(0.05)

    def test_bridge_refuses_a_false_endpoint(self, executable: str) -> None:
        endpoint, key = self._run_bridge(executable, honest=False)
        assert endpoint.proofs > 0, broken("bridge-proof", "the bridge never asked for a proof")
        assert not endpoint.saw(key), broken("bridge-proof", "the key reached the false endpoint")

    def test_bridge_recovers_from_a_true_endpoint(self, executable: str) -> None:
        endpoint, key = self._run_bridge(executable, honest=True)
        assert endpoint.keyed and wire.RECOVER_PATH in endpoint.keyed, broken(
            "bridge-recover", f"keyed requests: {endpoint.keyed}"
        )

    def test_bridge_sends_each_message_with_its_key_and_again_with_the_same(self, executable: str) -> None:
        with self._carrying(executable) as endpoint:
            endpoint.drop_next = True  # the first message's connection closes before any byte
            self.say(Said("first, dropped"))
            self._until(lambda: len(self._texts(endpoint, "first")) >= 2, "bridge-message-id", "sending it again")
            self.say(Said("second"))
            self._until(lambda: endpoint.answer_to("second") in self.shown(), "bridge-message-id", "showing the answer")
        first, again = self._texts(endpoint, "first, dropped")[:2]
        (second,) = self._texts(endpoint, "second")
        for carried in (first, again, second):
            assert carried.key is not None, broken("bridge-message-id", f"no {wire.MESSAGE_ID}")
            try:
                wire.parse_message_id(carried.key)
            except wire.WireError as exc:
                raise AssertionError(broken("bridge-message-id", str(exc))) from exc
        assert again.key == first.key, broken("bridge-message-id", f"sent again as {again.key!r}, first {first.key!r}")
        assert second.key != first.key, broken("bridge-message-id", f"two messages, one key {first.key!r}")
        shown = self.shown()
        assert shown.count(endpoint.answer_to("first, dropped")) == 1, broken("bridge-shown-once", f"shown: {shown}")

    def test_bridge_in_a_group_carries_only_the_owners_mention(self, executable: str) -> None:
        with self._carrying(executable) as endpoint:
            self.say(Said("hello group", group=True, mention=True))
            self._until(lambda: self.shown(group=True), "bridge-groups", "answering the owner's mention in the group")
            self.say(Said("not carried: a reply", group=True, reply=True))
            self.say(Said("not carried: no mention", group=True))
            self.say(Said("not carried: someone else's mention", owner=False, group=True, mention=True))
            self.say(Said("not carried: someone else's message", owner=False))
            self.say(Said("hello direct"))
            self._until(lambda: self._texts(endpoint, "hello direct"), "bridge-groups", "carrying the direct message")
            time.sleep(0.5)
        carried = [m.text for m in endpoint.messages]
        assert not self._texts(endpoint, "not carried"), broken("bridge-groups", f"carried: {carried}")
        (group,) = self._texts(endpoint, "hello group")
        (direct,) = self._texts(endpoint, "hello direct")
        assert group.thread != direct.thread, broken("bridge-groups", f"one conversation: {group.thread}")

    def test_bridge_confirms_an_answer_it_showed_without_showing_it_again(
        self, executable: str, tmp_path: Path
    ) -> None:
        answer = FakeEndpoint.answer_to("show me once")
        with self._carrying(executable, tmp_path) as endpoint:
            self.say(Said("show me once"))
            self._until(lambda: answer in self.shown(), "bridge-shown-once", "showing the answer")
            time.sleep(1.0)  # it notes the answer shown; then the bridge stops, as in a restart
        (showed,) = self._texts(endpoint, "show me once")
        # The harness never learnt the answer went out (killed the moment the bridge read its end):
        # recovery hands it over, under the id its head said.
        kept = wire.Undelivered(id=showed.answer, thread=showed.thread, content=answer)
        with self._carrying(executable, tmp_path, kept=[kept]) as again:
            self._until(lambda: again.confirmed, "bridge-shown-once", "confirming the recovered answer")
            time.sleep(0.5)
        shown = self.shown()
        assert shown.count(answer) == 1, broken("bridge-shown-once", f"the owner's chat shows {shown}")
        assert again.confirmed == [showed.answer], broken("bridge-shown-once", f"confirmed {again.confirmed}")
