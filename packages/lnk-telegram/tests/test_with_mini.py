"""The bridge against lnk-mini, the core's fixture harness, answering from the kit's stand-in model:
the same wire with a real adapter's endpoint behind it."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import OWNER

from link_conformance import Reply, StandInProvider
from link_conformance.running import RunningHarness
from link_plugin.channel import BridgeSpec
from link_plugin.contract import CONTRACT_VERSION
from lnk_testing.background import Background
from lnk_testing.endpoint import AGENT
from lnk_testing.telegram import TOKEN, FakeTelegram

MINI = Path(__file__).resolve().parents[2] / "lnk-core" / "tests" / "fixtures" / "mini.py"


@pytest.fixture
def provider() -> Iterator[StandInProvider]:
    with StandInProvider() as stand_in:
        yield stand_in


@pytest.fixture
def mini(tmp_path: Path, provider: StandInProvider, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningHarness]:
    executable = tmp_path / "bin" / "lnk-mini"
    executable.parent.mkdir()
    executable.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{MINI}" "$@"\n')
    executable.chmod(0o755)
    monkeypatch.setenv("PATH", f"{executable.parent}{os.pathsep}{os.environ['PATH']}")
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
