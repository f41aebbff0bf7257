"""`lnk agent chat` goes the way a bridge does: the proof first, so a program holding the port gets no
key; and what holds the endpoint key (its run folder, the harness's settings) is for lnk alone."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import reading
from rich.console import Console
from world import World

from link_conformance.fakes import FakeEndpoint
from link_plugin import wire
from link_plugin.channel import EndpointRef
from link_plugin.endpoint import EndpointError, EndpointUnreachable, ProofFailed
from link_plugin.harness import AgentRef
from lnk.chat import Chat
from lnk.cli import chat_messages
from lnk.runfiles import Endpoint, running_chat
from lnk.services import running
from lnk_testing.endpoint import Answer, ScriptedHarness


@reading
def test_chat_sends_the_key_only_to_an_endpoint_that_proves_itself(started: World) -> None:
    spec = started.spec("work")
    for honest in (False, True):
        impostor = FakeEndpoint(key=spec.endpoint.key if spec.endpoint else "", honest=honest).start()
        try:
            moved = spec.model_copy(update={"endpoint": EndpointRef(url=f"{impostor.origin}/v1", key=impostor.key)})
            chat = Chat.of(started.agent("work"), moved, Console(stderr=True))
            with pytest.raises(EndpointError) as failed:
                asyncio.run(chat.say("hello", lines=None, write=lambda _: None))  # type: ignore[arg-type]
        finally:
            impostor.stop()
        assert impostor.proofs == 1
        if honest:
            assert impostor.keyed == ["/v1/chat/completions"]  # proved itself: then, and only then, the key
        else:
            assert isinstance(failed.value, ProofFailed)
            assert impostor.keyed == [] and not impostor.saw("hello")

    # What holds the endpoint key is lnk's alone.
    agent = started.agent("work")
    assert stat.S_IMODE(os.stat(agent.run.root).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(agent.run.spec).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(agent.run.control).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(started.spec("work").settings_file).st_mode) == 0o600


@pytest.fixture
def talking(started: World) -> Iterator[tuple[Chat, ScriptedHarness]]:
    """`lnk agent chat`'s talking to an endpoint of its own that answers as scripted, for the agent `work`."""
    agent = started.agent("work")
    harness = ScriptedHarness(wire.new_endpoint_key(), agent=AgentRef(name=agent.name, id=agent.id, owner="o")).start()
    spec = started.spec("work").model_copy(update={"endpoint": harness.ref})
    try:
        yield Chat.of(agent, spec, Console(stderr=True)), harness
    finally:
        harness.stop()


def _say(chat: Chat, text: str) -> str:
    out: list[str] = []
    asyncio.run(chat.say(text, lines=None, write=out.append))  # type: ignore[arg-type]
    return "".join(out)


@reading
def test_each_line_goes_with_a_fresh_key_and_again_with_the_same_when_the_connection_broke(
    talking: tuple[Chat, ScriptedHarness],
) -> None:
    chat, harness = talking
    harness.script = lambda text: Answer(["you said: ", text], dropped=text == "first")
    assert _say(chat, "first") == "you said: first\n"
    assert _say(chat, "second") == "you said: second\n"
    first, again, second = harness.received
    assert first.key and first.key == again.key and again.repeat, "sent again with its key"
    assert second.key and second.key != first.key, "a fresh key for each line"
    assert [m.text for m in harness.messages] == ["first", "second"], "each kept once"


@reading
def test_an_answer_broken_off_comes_again_and_the_terminal_writes_on(talking: tuple[Chat, ScriptedHarness]) -> None:
    chat, harness = talking
    harness.script = lambda text: Answer(["once upon ", "a time"], crash_after=1)
    assert _say(chat, "a story") == "once upon a time\n", "what was written is not written twice"
    assert [m.text for m in harness.messages] == ["a story"]


@reading
def test_an_older_harness_is_not_sent_a_line_again_once_it_answered(talking: tuple[Chat, ScriptedHarness]) -> None:
    chat, harness = talking
    harness.keys = False
    harness.script = lambda text: Answer(["once upon ", "a time"], crash_after=1, kept_at_once=False)
    with pytest.raises(EndpointUnreachable):
        _say(chat, "a story")
    assert len(harness.received) == 1, "it would keep the line twice"


@pytest.mark.parametrize(
    ("argv", "read"),
    [
        (["agent", "chat", "work", "-m", "hi"], ("work", ["hi"])),
        (["agent", "chat", "-m", "hi", "--message", "and", "--message=more"], ("main", ["hi", "and", "more"])),
        (["agent", "chat", "-m", "hi", "work"], ("work", ["hi"])),
        (["agent", "chat", "work"], None),  # the terminal's lines: the CLI's
        (["agent", "chat", "work", "-m", "-v"], None),  # a text like an option: the CLI says what it reads
        (["agent", "chat", "work", "--help"], None),
        (["agent", "chat", "a", "b", "-m", "hi"], None),
        (["agent", "chat", "work", "-m"], None),
        (["agent", "start", "work"], None),
    ],
)
def test_only_plain_chat_messages_skip_the_command_line_parser(
    argv: list[str], read: tuple[str, list[str]] | None
) -> None:
    assert chat_messages(argv) == read


def test_a_chat_with_an_agent_not_running_starts_it_first(world: World) -> None:
    world.start("work")
    world.lnk("agent", "stop", "work")
    assert world.chat("work", "hello").strip() == "ok"
    assert running(world.agent("work")) is not None
    world.lnk("agent", "stop", "work")


def test_a_chat_reads_a_running_agent_as_its_models_read_it(world: World) -> None:
    """The chat to a running agent reads its files plainly (`lnk.runfiles`): what the models read,
    and nothing at all where they'd read anything else, so that the command line answers."""
    world.start("work")
    agent, spec = world.agent("work"), world.spec("work")
    assert spec.endpoint is not None
    found = running_chat(world.layout, "work")
    assert found is not None
    assert (found.name, found.id, found.control) == (agent.name, agent.id, agent.run.control)
    assert found.endpoint == Endpoint(spec.endpoint.url, spec.endpoint.key, spec.endpoint.proof)

    written = agent.run.spec.read_text()
    for endpoint in (None, {"url": spec.endpoint.url}, {**spec.endpoint.model_dump(), "proof": "yes"}):
        agent.run.spec.write_text(json.dumps({**json.loads(written), "endpoint": endpoint}))
        assert running_chat(world.layout, "work") is None
    agent.run.spec.write_text(written)
    settings = agent.config.settings.read_text()
    agent.config.settings.write_text(settings.replace(agent.id, agent.id.upper()))
    assert running_chat(world.layout, "work") is None
    agent.config.settings.write_text(settings)
    assert running_chat(world.layout, "nobody") is None

    world.lnk("agent", "stop", "work")
    assert running_chat(world.layout, "work") is None


@reading
def test_a_message_to_a_running_agent_loads_neither_typer_nor_pydantic(started: World) -> None:
    said = "import sys; from lnk import cli; code = cli._chat_running('work', ['hi']); print(code, sorted(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", said], env=started.env, capture_output=True, text=True, timeout=60, check=True
    )
    answer, last = done.stdout.strip().rsplit("\n", 1)
    code, modules = last.split(" ", 1)
    assert (answer, code) == ("ok", "0")
    for heavy in ("'pydantic'", "'typer'", "'rich'", "'lnk.agents'", "'lnk.runstate'"):
        assert heavy not in modules
