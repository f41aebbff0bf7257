"""The bridge against real endpoints answering from the kit's stand-in model: lnk-mini, the
conformance kit's reference harness, and Link Harness itself, killed and cut off at the exact
points where an answer could be shown twice or a message kept twice (through `lnk_testing.relay`)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import OWNER

from link_conformance import Reply, StandInProvider
from link_conformance.running import RunningHarness
from link_plugin.channel import BridgeSpec
from link_plugin.contract import CONTRACT_VERSION
from link_plugin.endpoint import EndpointClient
from lnk_testing.background import Background
from lnk_testing.endpoint import AGENT
from lnk_testing.relay import Relay
from lnk_testing.telegram import TOKEN, FakeTelegram


@pytest.fixture
def provider() -> Iterator[StandInProvider]:
    with StandInProvider() as stand_in:
        yield stand_in


@pytest.fixture
def mini(tmp_path: Path, provider: StandInProvider) -> Iterator[RunningHarness]:
    running = RunningHarness("lnk-mini", tmp_path, model_url=provider.url, tools={}, agent=AGENT).start()
    yield running
    running.stop()


@pytest.fixture
def carrying(
    mini: RunningHarness, telegram: FakeTelegram, bridge: Callable[..., Background]
) -> Callable[..., Background]:
    def start(steered: str | None = None) -> Background:
        spec = BridgeSpec(
            contract=CONTRACT_VERSION,
            agent=AGENT,
            endpoint=mini.endpoint_ref(),
            section={"owner": OWNER.id},
            secrets={"bot-token": TOKEN},
            steered=steered,
        )
        return bridge(spec)

    return start


def test_the_model_answers_through_mini(
    telegram: FakeTelegram, provider: StandInProvider, carrying: Callable[..., Background]
) -> None:
    provider.script(Reply(text="Hello from the model, written in pieces.", chunks=6, delay=0.05))
    carrying()
    telegram.private(OWNER, "hi")
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["Hello from the model, written in pieces."])
    assert provider.requests[-1].json["messages"][-1] == {"role": "user", "content": "hi"}


def test_a_steer_through_mini_is_answered_in_the_first_answer(
    telegram: FakeTelegram, provider: StandInProvider, carrying: Callable[..., Background]
) -> None:
    hold = threading.Event()
    provider.script(Reply(text="First thoughts.", hold=hold), Reply(text=" Now with the second message."))
    carrying(steered="👀")
    telegram.private(OWNER, "first")
    telegram.wait(lambda: len(provider.requests) == 1)
    second = telegram.private(OWNER, "second")
    telegram.wait(lambda: telegram.reactions(OWNER.id, second) == ["👀"])
    hold.set()
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["First thoughts. Now with the second message."])
    assert "second" in provider.requests[-1].text


@pytest.fixture
def link(tmp_path: Path, provider: StandInProvider) -> Iterator[RunningHarness]:
    running = RunningHarness("lnk-harness", tmp_path, model_url=provider.url, tools={}, agent=AGENT).start()
    yield running
    running.stop()


@pytest.fixture
def relay(link: RunningHarness) -> Iterator[Relay]:
    """Between the bridge and Link Harness."""
    port = urlsplit(link.endpoint_ref().url).port
    assert port is not None
    between = Relay(port).start()
    yield between
    between.stop()


def _through(relay: Relay, link: RunningHarness, folder: Path) -> BridgeSpec:
    endpoint = link.endpoint_ref()
    return BridgeSpec(
        contract=CONTRACT_VERSION,
        agent=AGENT,
        endpoint=endpoint.model_copy(update={"url": f"http://127.0.0.1:{relay.port}/v1"}),
        section={"owner": OWNER.id},
        secrets={"bot-token": TOKEN},
        folder=str(folder),
    )


def _nothing_kept(link: RunningHarness) -> bool:
    return asyncio.run(EndpointClient(link.endpoint_ref(), AGENT).recover()) == []


def test_link_harness_killed_right_after_an_answers_end_shows_it_once(
    telegram: FakeTelegram,
    provider: StandInProvider,
    link: RunningHarness,
    relay: Relay,
    bridge: Callable[..., Background],
    folder: Path,
) -> None:
    provider.script(Reply(text="The whole answer.", chunks=3), Reply(text="Back again."))
    harness = link.process
    assert harness is not None
    relay.after(b"data: [DONE]", lambda: os.kill(harness.pid, signal.SIGKILL))
    first = bridge(_through(relay, link, folder))
    telegram.private(OWNER, "tell me")
    telegram.wait(lambda: relay.struck.is_set() and telegram.texts(OWNER.id) == ["The whole answer."])
    link.stop()
    typed = len(telegram.called("sendChatAction"))
    telegram.private(OWNER, "are you back?")
    telegram.wait(lambda: len(telegram.called("sendChatAction")) > typed)
    time.sleep(0.5)  # the bridge found nothing listening and holds the message
    link.start()
    telegram.wait(lambda: telegram.texts(OWNER.id)[1:] == ["Back again."], timeout=60)
    # The restarted harness finishes what its dead self left as it takes the conversation again,
    # maybe after the bridge's recovery round: a bridge starting again asks for it once more.
    first.stop()
    bridge(_through(relay, link, folder))
    telegram.wait(lambda: _nothing_kept(link), timeout=30)
    assert telegram.texts(OWNER.id) == ["The whole answer.", "Back again."], "each answer shown once"


def test_link_harness_keeps_a_message_sent_again_with_its_key_once(
    telegram: FakeTelegram,
    provider: StandInProvider,
    link: RunningHarness,
    relay: Relay,
    bridge: Callable[..., Background],
    folder: Path,
) -> None:
    hold = threading.Event()
    provider.script(Reply(text="Kept once.", hold=hold))
    relay.hold(b"POST /v1/chat/completions")
    bridge(_through(relay, link, folder))
    telegram.private(OWNER, "keep me once")
    telegram.wait(lambda: relay.holding.is_set() and provider.requests)  # the harness kept it and asked the model
    relay.cut()  # the bridge sees the connection close before any byte of the answer: it sends it again
    hold.set()
    telegram.wait(lambda: telegram.texts(OWNER.id) == ["Kept once."], timeout=60)
    telegram.wait(lambda: _nothing_kept(link), timeout=30)
    assert len(provider.requests) == 1, "the model was asked once"
    said = [m for m in provider.requests[0].json["messages"] if m["role"] == "user"]
    assert sum("keep me once" in str(m["content"]) for m in said) == 1
    assert telegram.texts(OWNER.id) == ["Kept once."]
