"""A channel's bridge on the shared base: recovery before the service, the rules for each message,
what the channel shows while it answers."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from test_bridge_carry import PACE, Place, run, until

from link_plugin.approvals import Question
from link_plugin.bridge.base import EDITED, UNSUPPORTED, Bridge
from link_plugin.bridge.carry import Place as ChannelPlace
from link_plugin.bridge.rules import Heard, Incoming
from link_plugin.bridge.shown import ShownAnswers
from link_plugin.channel import BridgeSpec
from link_plugin.contract import CONTRACT_VERSION
from link_plugin.scheduler import Notice, post, waiting
from lnk_testing.endpoint import AGENT, Answer, ScriptedHarness


class Asked(Place):
    async def ask(self, question: Question) -> str:
        return await self.send(question.wording())

    async def settle(self, message: str, text: str) -> None:
        await self.edit(message, text)


class Queued(Bridge):
    """A channel whose service is a queue the test puts messages on."""

    def __init__(self, harness: ScriptedHarness, folder: Path | None = None, outbox: Path | None = None) -> None:
        spec = BridgeSpec(
            contract=CONTRACT_VERSION,
            agent=AGENT,
            endpoint=harness.ref,
            section={},
            secrets={},
            folder=str(folder) if folder else None,
            outbox=str(outbox) if outbox else None,
        )
        super().__init__(spec, "queued", "owner", limit=100, pace=PACE, probe=0.05, notices=0.02)
        self.service: asyncio.Queue[Heard] = asyncio.Queue()
        self.places: dict[str, Asked] = {}
        self.said: list[str] = []
        self.reached = asyncio.Event()

    async def reach(self) -> str:
        await self.reached.wait()
        self.said.append("reached")
        return "the queue"

    async def listen(self) -> None:
        while True:
            heard = await self.service.get()
            self.spawn(f"message {heard.key}", self.heard(heard, self.place(heard.chat)))

    async def close(self) -> None:
        self.said.append("closed")

    def place(self, chat: str) -> Asked:
        return self.places.setdefault(chat, Asked())

    def owner_chat(self) -> Asked:
        return self.place("owner")

    @asynccontextmanager
    async def answering(self, place: ChannelPlace) -> AsyncIterator[None]:
        self.said.append("answering")
        yield
        self.said.append("answered")


def _heard(
    text: str | None,
    key: str,
    *,
    sender: str = "owner",
    group: bool = False,
    mentioned: bool = False,
    edited: bool = False,
) -> Heard:
    incoming = Incoming(sender=sender, direct=not group, mentioned=mentioned)
    return Heard(incoming=incoming, chat="group" if group else sender, text=text, key=key, edited=edited)


def test_recovery_is_asked_first_and_its_answer_shown_once_the_service_is_reached(harness: ScriptedHarness) -> None:
    harness.keep("queued:owner", "finished while nobody waited")
    bridge = Queued(harness)

    async def main() -> None:
        running = asyncio.create_task(bridge.run())
        await until(lambda: harness.recovers >= 1)
        assert bridge.places == {}, "nothing shown before the service is reached"
        bridge.reached.set()
        await until(lambda: bridge.place("owner").finals == ["finished while nobody waited"])
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

    run(main)
    assert bridge.said == ["reached", "closed"]


def test_a_bridge_asked_to_stop_finishes_the_answer_it_shows_and_notes_it_shown(
    harness: ScriptedHarness, tmp_path: Path
) -> None:
    """SIGTERM, as Link stops an agent, mid-answer: the answer is shown whole and noted as shown
    before the bridge ends, so its harness handing it over again after a restart shows it once."""
    harness.script = lambda text: Answer(["a slow ", "answer ", "to ", text], delay=0.2)
    bridge = Queued(harness, tmp_path)

    async def main() -> None:
        running = asyncio.create_task(bridge.run())
        bridge.reached.set()
        await bridge.service.put(_heard("hello", "m1"))
        await until(lambda: bridge.place("owner").messages)  # its first words are on the screen
        os.kill(os.getpid(), signal.SIGTERM)
        await running  # a stop asked for ends the bridge as it should, not with an error

    run(main)
    assert bridge.place("owner").finals == ["a slow answer to hello"]
    assert bridge.said == ["reached", "answering", "answered", "closed"]
    assert [m.text for m in harness.messages] == ["hello"]
    assert "queued:owner/1" in ShownAnswers.in_folder(str(tmp_path), print)


def test_only_the_owners_text_is_carried_and_the_rest_gets_a_note_or_nothing(harness: ScriptedHarness) -> None:
    bridge = Queued(harness)
    bridge.reached.set()

    async def main() -> None:
        running = asyncio.create_task(bridge.run())
        for heard in (
            _heard("let me in", "s:1", sender="stranger"),
            _heard("no mention", "g:1", group=True),
            _heard(None, "o:1"),
            _heard("changed", "o:2", edited=True),
            _heard("hello", "o:3"),
            _heard("hello group", "g:2", group=True, mentioned=True),
        ):
            await bridge.service.put(heard)
        await until(lambda: bridge.place("owner").finals[-1:] == ["you said: hello"])
        await until(lambda: bridge.place("group").finals == ["you said: hello group"])
        await until(lambda: bridge.said.count("answered") == 2)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

    run(main)
    assert sorted((r.text, r.key) for r in harness.received) == [("hello", "o:3"), ("hello group", "g:2")]
    assert bridge.place("owner").finals[:2] == [UNSUPPORTED, EDITED]
    assert bridge.place("stranger").calls == [] and bridge.place("stranger").typed == 0, "a stranger gets nothing"
    assert bridge.said.count("answering") == 2, "shown while each is answered, and only then"


def test_an_answer_nobody_waits_for_is_shown_from_the_outbox_in_the_owners_chat_once(
    harness: ScriptedHarness, tmp_path: Path
) -> None:
    """A schedule's answer goes to the owner's own direct chat (never a group); a subagent's parent
    conversation's answer to the chat it names. Each is removed once shown, so shown once."""
    folder = tmp_path / "outbox"
    post(folder, Notice(id="n1", text="Call the dentist.", sender="schedule:abc"))
    bridge = Queued(harness, outbox=folder)

    async def main() -> None:
        running = asyncio.create_task(bridge.run())
        await asyncio.sleep(0.1)
        assert bridge.places == {}, "nothing shown before the service is reached"
        bridge.reached.set()
        await until(lambda: bridge.place("owner").finals == ["Call the dentist."])
        post(folder, Notice(id="n2", chat="group", text="The invoice is in work/.", sender="subagent:x"))
        await until(lambda: bridge.place("group").finals == ["The invoice is in work/."])
        await asyncio.sleep(0.1)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

    run(main)
    assert bridge.place("owner").finals == ["Call the dentist."]
    assert waiting(folder) == []
