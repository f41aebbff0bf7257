"""5. The harness is killed (SIGKILL) in the middle of an answer: the supervisor starts it again, it
finishes the turn it was in, and the bridge recovers the answer; the phone sees it exactly once."""

from __future__ import annotations

import os
import signal

from conftest import AGENT, OWNER

from lnk_e2e import processes
from lnk_e2e.machine import Machine
from lnk_e2e.model import STORY, Model
from lnk_e2e.phone import Phone
from lnk_e2e.waiting import wait_for

INTERRUPTED = "(The agent stopped before it finished; its answer will follow when it's back.)"


def test_a_harness_killed_mid_answer_comes_back_and_the_answer_arrives_once(
    machine: Machine, owner: Phone, model: Model
) -> None:
    before = machine.status(AGENT)["process"]
    harness = next(p for p in processes.descendants(before["pid"]) if p.argv[-2:] == ["-m", "lnk_harness.serve"])
    shown, answers = len(owner.messages()), len(model.answers)
    model.slow.set()
    model.expect(2)  # the answer the kill cuts short, then the same turn finished after the restart
    owner.send("Tell me a story")
    assert model.answer(answers) == STORY

    def partly_shown() -> bool:
        return any(m.text and STORY.startswith(m.text) and m.text != STORY for m in owner.messages()[shown:])

    wait_for(partly_shown, 30, "the story's first words on the phone")
    os.kill(harness.pid, signal.SIGKILL)

    def restarted() -> bool:
        process = machine.status(AGENT)["process"]
        return bool(process["restarts"] > before["restarts"] and process["state"] == "running")

    wait_for(restarted, 60, "the supervisor starting the harness again")
    owner.wait_for_message(STORY, timeout=90)
    outbox = machine.folder(AGENT) / "chats" / f"telegram:{OWNER.id}" / "outbox"
    wait_for(lambda: not any(outbox.glob("*")), 30, "the bridge confirming the recovered answer")

    cut_short, *rest = owner.messages()[shown:]
    assert cut_short.text.endswith(INTERRUPTED) and STORY not in cut_short.text
    assert [m.text for m in rest] == [STORY]
    assert len(model.answers) == answers + 2
