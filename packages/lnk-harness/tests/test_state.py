"""A conversation's state (state.json, keys/, the model's window) says what its events say, however it
was come by: folded in as events came, loaded in a new process, or rebuilt after a crash or by hand."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import MAIN
from facts import facts
from helpers import Harness, send, settings_for, wait_until

from link_conformance.provider import Reply, StandInProvider
from link_plugin.harness import Turns
from link_plugin.wire import Sender, Thread
from lnk_harness.conversation import Conversation
from lnk_harness.events import Answer, Asked, CallMade, Delivered, Event, EventLog, MessageIn, Numbered, Output, Result
from lnk_harness.window import Window

THREAD = Thread.parse("kit:state")

# --- what the events say, walked from the first event (how the harness read them before) ------


def said_by(events: list[Numbered], show: list[int], budget: int) -> list[dict[str, Any]]:
    """The model's messages, from every event."""
    messages = {n: e for n, e in events if isinstance(e, MessageIn)}

    def line(m: MessageIn) -> dict[str, Any]:
        if m.sender is None:
            return {"role": "user", "content": m.text}
        hops = f", {m.sender.hops} hop{'s' if m.sender.hops != 1 else ''} away" if m.sender.hops else ""
        return {"role": "user", "content": f"[A message from {m.sender.who}, not your owner{hops}]\n{m.text}"}

    out: list[dict[str, Any]] = []
    for _, event in events:
        if isinstance(event, Output):
            out += [line(messages[m]) for m in event.took]
            if not event.text and not event.calls:
                continue
            said: dict[str, Any] = {"role": "assistant", "content": event.text or None}
            if event.calls:
                said["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in event.calls
                ]
            out.append(said)
        elif isinstance(event, Result):
            out.append({"role": "tool", "tool_call_id": event.call, "content": event.content})
    users = [i for i, message in enumerate(out) if message["role"] == "user"]
    start, used = (users[-1], 0) if users else (0, 0)
    for i in range(users[-1] - 1 if users else -1, -1, -1):
        used += len(json.dumps(out[i], ensure_ascii=False))
        if used > budget:
            break
        if out[i]["role"] == "user":
            start = i
    return out[start:] + [line(messages[m]) for m in show]


def facts_of(events: list[Numbered]) -> dict[str, Any]:
    """What a turn asks of a conversation, from every event."""
    messages = [n for n, e in events if isinstance(e, MessageIn)]
    taken = {m for _, e in events if isinstance(e, Output) for m in e.took}
    answered = {m for _, e in events if isinstance(e, Answer) for m in e.messages}
    answers = [n for n, e in events if isinstance(e, Answer)]
    last = answers[-1] if answers else 0
    results = {e.call for _, e in events if isinstance(e, Result)}
    made = {e.call for _, e in events if isinstance(e, CallMade)}
    first = next((e for _, e in events if isinstance(e, MessageIn)), None)
    return {
        "last": events[-1][0] if events else 0,
        "unseen": [m for m in messages if m not in taken],
        "unanswered": [m for m in messages if m not in answered],
        "answer": last,
        "delivered": any(isinstance(e, Delivered) and e.answer == last for _, e in events) if last else False,
        "turn_text": "\n\n".join(e.text for n, e in events if n > last and isinstance(e, Output) and e.text),
        "open_calls": [
            (c.id, c.id in made) for _, e in events if isinstance(e, Output) for c in e.calls if c.id not in results
        ],
        "owners": first is None or first.sender is None,
    }


# --- conversations made at random, as turns write them ------------------------------------


def words(rng: random.Random, most: int) -> str:
    return " ".join(
        rng.choice(("keys", "door", "table", "Friday", "ünïcode", "a", "the")) for _ in range(rng.randint(0, most))
    )


def conversation_events(seed: int, count: int) -> list[Event]:
    """Turns with steering messages, tool calls (some left open), stopped steps, answers and their delivery."""
    rng = random.Random(seed)
    out: list[Event] = []
    unseen: list[int] = []
    unanswered: list[int] = []
    calls = 0

    def add(event: Event) -> int:
        out.append(event)
        return len(out)

    while len(out) < count:
        for _ in range(rng.choice((1, 1, 1, 2))):
            sender = Sender(who="Bea", hops=rng.randint(0, 2)) if rng.random() < 0.2 else None
            key = f"k-{len(out)}" if rng.random() < 0.5 else None
            number = add(MessageIn(text=words(rng, 300), sender=sender, key=key))
            unseen.append(number)
            unanswered.append(number)
        for _ in range(rng.randint(1, 3)):
            asked = [
                Asked(id=f"c{(calls := calls + 1)}", name="search", arguments="{}") for _ in range(rng.randint(0, 2))
            ]
            stopped = rng.random() < 0.1
            add(Output(turn="t", took=unseen, text="" if stopped else words(rng, 400), calls=asked, stopped=stopped))
            unseen = []
            for call in asked:
                if rng.random() < 0.9:
                    add(CallMade(turn="t", call=call.id, name=call.name))
                if rng.random() < 0.9:
                    add(Result(turn="t", call=call.id, name=call.name, content=words(rng, 200)))
            if rng.random() < 0.2:
                number = add(MessageIn(text=words(rng, 50)))  # steered in mid-turn
                unseen.append(number)
                unanswered.append(number)
        if rng.random() < 0.8:
            answered = [m for m in unanswered if m not in unseen]
            answer = add(
                Answer(turn="t", messages=answered, text="...", waited=True, name=answered[0] if answered else None)
            )
            unanswered = [m for m in unanswered if m in unseen]
            if rng.random() < 0.7:
                add(Delivered(answer=answer, via="request"))
    return out[:count]


@pytest.mark.parametrize("seed", range(12))
def test_the_state_says_what_every_event_says_as_they_come(tmp_path: Path, seed: int) -> None:
    conversation = Conversation(tmp_path, THREAD, Turns())
    written: list[Numbered] = []
    for event in conversation_events(seed, 160):
        written.append((conversation.events.append(event), event))
        assert facts(conversation) == facts_of(written), f"after event {len(written)}"
        show = facts_of(written)["unseen"]
        for budget in (100_000, 8_000, 1_500, 0):
            expected = said_by(written, show, budget)
            assert conversation.model_messages(show, budget) == expected, f"budget {budget}, event {len(written)}"
            tail = Window.from_tail(conversation.events, len(written))
            assert tail.messages(budget) == said_by(written, [], budget), f"from the tail, event {len(written)}"


def test_a_window_built_from_the_tail_reads_no_further_back_than_it_shows(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events")
    for turn in range(400):
        asked = log.append(MessageIn(text=f"question {turn} " + "x" * 500))
        log.append(Output(turn="t", took=[asked], text=f"answer {turn} " + "y" * 500))
        log.append(Answer(turn="t", messages=[asked], text="", waited=True))
    for number in range(1, 900):  # written over by hand: reading any of these fails
        (tmp_path / "events" / f"{number:08d}.json").write_text("not an event")
    fresh = EventLog(tmp_path / "events")
    shown = Window.from_tail(fresh, 1200, budget=20_000).messages(20_000)
    assert shown[0]["content"].startswith("question 381 ") and len(shown) == 2 * 19


# --- a new process: state.json, checked, folded forward or rebuilt ---------------------------

LOOK = """
import json, sys
from pathlib import Path
from link_plugin.harness import Turns
from link_plugin.wire import Thread
from lnk_harness.conversation import Conversation
sys.path.insert(0, sys.argv[1])
from facts import facts
conversation = Conversation(Path(sys.argv[2]), Thread.parse(sys.argv[3]), Turns())
said = facts(conversation)
print(json.dumps({
    **said,
    "window": conversation.model_messages(said["unseen"], 8_000),
    "keys": {key: conversation.state.kept_under(key) for key in sys.argv[4:]},
}))
conversation.render("main")
"""


def look(chats: Path, *keys: str) -> dict[str, Any]:
    """What a new process makes of the conversation (and the message it finds under each key)."""
    argv = [sys.executable, "-c", LOOK, str(Path(__file__).parent), str(chats), str(THREAD), *keys]
    done = subprocess.run(argv, capture_output=True, check=True)
    return json.loads(done.stdout)


def expected(conversation: Conversation, *keys: str) -> dict[str, Any]:
    written = conversation.events.read()
    facts = facts_of(written)
    kept = {e.key: n for n, e in written if isinstance(e, MessageIn) and e.key is not None}
    return {
        **facts,
        "open_calls": [list(call) for call in facts["open_calls"]],
        "window": said_by(written, facts["unseen"], 8_000),
        "keys": {key: kept.get(key) for key in keys},
    }


def written_conversation(tmp_path: Path, events: int = 120, later: int = 0) -> tuple[Conversation, list[Event]]:
    """A conversation of `events` events, and the `later` events that follow them, not yet written."""
    conversation = Conversation(tmp_path, THREAD, Turns())
    made = conversation_events(7, events + later)
    for event in made[:events]:
        conversation.events.append(event)
    return conversation, made[events:]


def keys_of(conversation: Conversation) -> list[str]:
    return [e.key for _, e in conversation.events.read() if isinstance(e, MessageIn) and e.key is not None]


def test_a_new_process_loads_the_state_and_folds_in_what_came_after(tmp_path: Path) -> None:
    conversation, later = written_conversation(tmp_path, 120, 40)
    conversation.render("main")  # after a turn: state.json is written
    assert json.loads((conversation.folder / "state.json").read_text())["through"] == 120
    for event in later:  # what another process wrote after it
        conversation.events.append(event)
    keys = [*keys_of(conversation)[::7], "nope"]
    assert look(tmp_path, *keys) == expected(conversation, *keys)
    assert json.loads((conversation.folder / "state.json").read_text())["through"] == 160, "saved as it went"


def another_folder(folder: Path) -> None:
    state = json.loads((folder / "state.json").read_text())
    state["events"][1] += 1
    (folder / "state.json").write_text(json.dumps(state))


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda folder: (folder / "state.json").unlink(), id="missing"),
        pytest.param(lambda folder: (folder / "state.json").write_text('{"version": 1, "thr'), id="cut"),
        pytest.param(lambda folder: (folder / "state.json").write_text('{"version": 9}'), id="unknown"),
        pytest.param(
            lambda folder: (folder / "state.json").write_text(
                (folder / "state.json").read_text().replace('"through":120', '"through":500')
            ),
            id="ahead-of-the-events",
        ),
        pytest.param(another_folder, id="another-folder"),
        pytest.param(lambda folder: shutil.rmtree(folder / "keys"), id="no-keys"),
    ],
)
def test_a_state_missing_stale_or_corrupt_is_rebuilt_from_the_events(tmp_path: Path, spoil: Any) -> None:
    conversation, _ = written_conversation(tmp_path)
    conversation.render("main")
    spoil(conversation.folder)
    keys = [*keys_of(conversation)[::5], "nope"]
    assert look(tmp_path, *keys) == expected(conversation, *keys)
    state = json.loads((conversation.folder / "state.json").read_text())
    assert state["through"] == 120 and state["events"] == list(conversation.events.identity() or ())


def test_a_key_file_that_names_another_message_has_the_keys_rebuilt(tmp_path: Path) -> None:
    conversation, _ = written_conversation(tmp_path)
    conversation.render("main")
    one, two, *_ = keys_of(conversation)
    kept = expected(conversation, one, two)["keys"]
    folder = conversation.folder / "keys"
    files = {path.read_text(): path for path in folder.iterdir()}
    files[str(kept[one])].write_text(str(kept[two]))  # one's file names two's message
    files[str(kept[two])].write_text("garbage")
    (folder / ("0" * 64)).write_text(str(kept[one]))  # a file no key of these events hashes to
    assert look(tmp_path, one, two)["keys"] == kept
    assert files[str(kept[one])].read_text() == str(kept[one]) and files[str(kept[two])].read_text() == str(kept[two])


def test_a_crash_between_events_and_their_state_loses_nothing(tmp_path: Path) -> None:
    """The state is written after the events it says: a process that died after writing events
    (and before its state) leaves a state behind them, which the next one folds forward."""
    conversation, later = written_conversation(tmp_path, 60, 30)
    conversation.render("main")
    saved = (conversation.folder / "state.json").read_bytes()
    for event in later:
        conversation.events.append(event)
    conversation.render("main")
    (conversation.folder / "state.json").write_bytes(saved)  # as if the newer one never got written
    keys = keys_of(conversation)[-4:]
    assert look(tmp_path, *keys) == expected(conversation, *keys)


# --- a harness: a long conversation answered from its tail --------------------------------


def test_a_restarted_harness_answers_a_long_conversation_from_its_tail(
    tmp_path: Path, provider: StandInProvider
) -> None:
    """Once its state is saved, a conversation is answered without reading what lies before the
    model's window: here those events are made unreadable, and every turn still goes right, a
    message sent again with an old key included."""
    settings = settings_for(tmp_path, MAIN, provider.url)
    conversation = Conversation(Path(settings.folders.chats), Thread.parse("telegram:77"), settings.turns)
    log = conversation.events
    for turn in range(300):
        asked = log.append(MessageIn(text=f"question {turn} " + "x" * 400, key=f"update-{turn}"))
        log.append(Output(turn="t", took=[asked], text=f"answer {turn} " + "y" * 400))
        answer = log.append(Answer(turn="t", messages=[asked], text=f"answer {turn} " + "y" * 400, waited=True))
        log.append(Delivered(answer=answer, via="request"))
    provider.script(Reply(text="The first answer."), Reply(text="The second answer."))
    with Harness([settings]) as harness:
        assert send(harness, "hello again", "telegram:77", message_id="update-300").text == "The first answer."
        wait_until(lambda: json.loads((conversation.folder / "state.json").read_text())["through"] >= 1203)
    for number in range(2, 600):  # all but the first and the newest 150 turns: none can be read
        (log.folder / f"{number:08d}.json").write_text("not an event")
    with Harness([settings]) as harness:
        before = len(provider.requests)
        old = send(harness, "question 299 " + "x" * 400, "telegram:77", message_id="update-299")
        again = send(harness, "hello again", "telegram:77", message_id="update-300")
        assert len(provider.requests) == before, "neither was kept again, nor asked again"
        assert (old.status, old.answer_id) == (200, "telegram:77/1199") and old.text.startswith("answer 299")
        assert (again.text, again.answer_id) == ("The first answer.", "telegram:77/1201")
        new = send(harness, "and now?", "telegram:77", message_id="update-301")
        assert (new.status, new.text) == (200, "The second answer.")
    shown = [m["content"] for m in provider.requests[-1].json["messages"][1:]]
    assert shown[-3:] == ["hello again", "The first answer.", "and now?"]
    assert shown[0].startswith("question ") and len(json.dumps(shown)) < 110_000, "the newest 100,000 characters"


def test_a_conversation_whose_turn_runs_is_never_let_go(tmp_path: Path) -> None:
    running = Conversation(tmp_path, Thread.parse("kit:running"), Turns())
    running.events.append(MessageIn(text="a long turn"))
    idle = Conversation(tmp_path, Thread.parse("kit:idle"), Turns())
    idle.events.append(MessageIn(text="said once"))
    with running.held():
        running.state.load()
        idle.state.load()
        for other in range(40):
            conversation = Conversation(tmp_path, Thread.parse(f"kit:other-{other}"), Turns())
            conversation.events.append(MessageIn(text="hello"))
            conversation.state.load()
        assert running.state.loaded(), "held while its turn runs"
        assert not idle.state.loaded(), "let go: a process keeps a bounded number of conversations"
