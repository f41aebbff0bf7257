"""Events are written once, by their number: racing writers never share one, nothing is rewritten."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from link_plugin.harness import Turns
from link_plugin.wire import Sender, Thread
from lnk_harness.conversation import Conversation
from lnk_harness.events import Answer, EventLog, MessageIn, Output
from lnk_harness.transcript import header, render

WRITERS = 4
EACH = 40


def _write(folder: str, writer: int) -> None:
    log = EventLog(Path(folder))
    for index in range(EACH):
        log.append(MessageIn(text=f"{writer}-{index}"))


def test_racing_writers_each_get_a_number_of_their_own(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    context = multiprocessing.get_context("fork")
    writers = [context.Process(target=_write, args=(str(folder), w)) for w in range(WRITERS)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
        assert writer.exitcode == 0
    read = EventLog(folder).read()
    assert [n for n, _ in read] == list(range(1, WRITERS * EACH + 1))
    texts = [e.text for _, e in read if isinstance(e, MessageIn)]
    assert sorted(texts) == sorted(f"{w}-{i}" for w in range(WRITERS) for i in range(EACH))
    for writer in range(WRITERS):
        mine = [t for t in texts if t.startswith(f"{writer}-")]
        assert mine == [f"{writer}-{i}" for i in range(EACH)], "each writer's events keep their order"
    assert sorted(os.listdir(folder)) == [f"{n:08d}.json" for n in range(1, WRITERS * EACH + 1)], "no leftovers"


def test_a_writer_with_an_old_view_takes_the_next_free_number(tmp_path: Path) -> None:
    one, two = EventLog(tmp_path), EventLog(tmp_path)
    assert one.append(MessageIn(text="a")) == 1
    assert two.append(MessageIn(text="b")) == 2
    assert one.append(MessageIn(text="c")) == 3, "it lost the race for 2, read again, took 3"
    first = (tmp_path / "00000001.json").read_bytes()
    one.append(MessageIn(text="d"))
    assert (tmp_path / "00000001.json").read_bytes() == first


def test_the_transcript_is_rendered_from_the_events_and_grows_with_them(tmp_path: Path) -> None:
    conversation = Conversation(tmp_path, Thread.parse("telegram:5"), Turns())
    log = conversation.events
    log.append(MessageIn(text="Where are my keys?", at=0.0))
    log.append(MessageIn(text="Ana asked me to ask", sender=Sender(who="Bea", hops=1), at=60.0))
    conversation.render("main")
    log.append(Output(turn="t", took=[1, 2], text="On the hook", at=120.0))
    log.append(Output(turn="t", took=[], text="by the door.", at=121.0))
    log.append(Answer(turn="t", messages=[1, 2], text="On the hook\n\nby the door.", waited=True, at=122.0))
    conversation.render("main")
    text = conversation.transcript.path.read_text()
    assert text == header(conversation.thread) + render(log.read(), "main")[0]
    assert text.startswith("# Conversation telegram:5")
    assert "## Owner · 1970-01-01 00:00 UTC\n\nWhere are my keys?" in text
    assert "## Bea (not the owner) · 1970-01-01 00:01 UTC\n\nAna asked me to ask" in text
    assert "## main · 1970-01-01 00:02 UTC\n\nOn the hook\n\nby the door.\n" in text, "one heading for one turn"

    whole = text
    with conversation.transcript.path.open("ab") as half:
        half.write(b"## main \xc2")  # a render that died half-way through appending
    log.append(MessageIn(text="thanks", at=180.0))
    conversation.render("main")
    assert conversation.transcript.path.read_text() == whole + "## Owner · 1970-01-01 00:03 UTC\n\nthanks\n\n"

    conversation.transcript.path.write_text("edited by hand")
    conversation.render("main")
    assert conversation.transcript.path.read_text() == whole + "## Owner · 1970-01-01 00:03 UTC\n\nthanks\n\n"


def test_a_message_that_came_mid_step_takes_its_place_after_the_tool_results(tmp_path: Path) -> None:
    from lnk_harness.events import Asked, Result

    conversation = Conversation(tmp_path, Thread.parse("kit:mid-step"), Turns())
    log = conversation.events
    log.append(MessageIn(text="search it"))
    log.append(Output(turn="t", took=[1], calls=[Asked(id="c1", name="search", arguments="{}")]))
    log.append(MessageIn(text="also this"))
    log.append(Result(turn="t", call="c1", name="search", content="found"))
    shown = conversation.model_messages(conversation.history().unseen())
    assert [m["role"] for m in shown] == ["user", "assistant", "tool", "user"]
    assert shown[-1]["content"] == "also this"


def test_a_conversation_deleted_and_begun_again_is_read_anew(tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "events"
    EventLog(folder).append(MessageIn(text="forget this"))
    assert [e.text for _, e in EventLog(folder).read() if isinstance(e, MessageIn)] == ["forget this"]
    shutil.rmtree(folder)
    EventLog(folder).append(MessageIn(text="a fresh start"))
    assert [e.text for _, e in EventLog(folder).read() if isinstance(e, MessageIn)] == ["a fresh start"]


def test_the_model_gets_the_newest_of_a_long_conversation_from_a_message_on(tmp_path: Path) -> None:
    from lnk_harness.events import Asked, Result

    conversation = Conversation(tmp_path, Thread.parse("kit:long"), Turns())
    log = conversation.events
    for turn in range(50):
        asked = log.append(MessageIn(text=f"question {turn}"))
        log.append(Output(turn="t", took=[asked], calls=[Asked(id=f"c{turn}", name="search", arguments="{}")]))
        log.append(Result(turn="t", call=f"c{turn}", name="search", content="x" * 1000))
        log.append(Output(turn="t", took=[], text=f"answer {turn}"))
        log.append(Answer(turn="t", messages=[asked], text=f"answer {turn}", waited=True))
    now = log.append(MessageIn(text="the newest"))
    shown = conversation.model_messages([now], budget=5_000)
    # the last turn whole, then what fits in 5,000 characters: three turns of about 1,200
    assert shown[0] == {"role": "user", "content": "question 46"}, "it starts at a message, never at a tool result"
    assert shown[-1] == {"role": "user", "content": "the newest"}
    assert len(shown) == 4 * 4 + 1
    whole = conversation.model_messages([now])
    assert whole[0]["content"] == "question 0" and len(whole) == 50 * 4 + 1
