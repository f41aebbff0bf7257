"""The scripted model: the conformance kit's stand-in provider, answering as a model with tools would.

What it answers depends only on what the harness sent: the owner's newest message picks a skill;
a skill with a tool calls it, and once the tool's result is in the request, answers from that
result (so an answer holds what the tool found, and nothing the test wrote into it). It takes only
its own key: a request the proxy didn't add the key to is refused, 401, as a provider would.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from link_conformance import Reply, StandInProvider, ToolCall
from link_conformance.provider import Recorded
from lnk_e2e.waiting import wait_for

STORY = (
    "Once upon a time a lighthouse keeper counted the ships that passed each night. "
    "One winter a ship passed without lights, and she rowed out to meet it. "
    "It was her brother, home at last, who had sold his lamps to buy her a telescope. "
    "They watched the ships together from then on, and never missed one."
)


@dataclass(frozen=True)
class Pace:
    """How an answer streams: in `chunks` pieces, `delay` seconds apart."""

    chunks: int
    delay: float

    @property
    def seconds(self) -> float:
        return self.chunks * self.delay


PACE = Pace(chunks=6, delay=0.4)


def _result_line(result: str) -> str:
    """The note `remember` says it wrote."""
    try:
        line = json.loads(result).get("line")
    except (json.JSONDecodeError, AttributeError):
        line = None
    return str(line).removeprefix("- ") if line else ""


def _found(pattern: str, answer: str, otherwise: str) -> Callable[[re.Match[str], str], str]:
    def compose(asked: re.Match[str], result: str) -> str:
        match = re.search(pattern, result)
        return answer.format(*match.groups()) if match else otherwise

    return compose


def _looked_up(asked: re.Match[str], result: str) -> str:
    """What a round of the crash test found: how many passages `search` gave, or that the call was
    lost (the harness died during it and the next one answered it "not made again")."""
    try:
        found = len(json.loads(result)["results"])
    except (json.JSONDecodeError, KeyError, TypeError):
        return f"Round {asked.group(1)}: the search didn't answer ({result.split('.')[0]})."
    return f"Round {asked.group(1)}: the search found {found} passages about {asked.group(2)}."


@dataclass(frozen=True)
class Skill:
    asked: str
    """A pattern the owner's message matches."""
    tool: str | None
    arguments: Callable[[re.Match[str]], dict[str, Any]]
    answer: Callable[[re.Match[str], str], str]
    """The answer, from the owner's words and the tool's result (or the message, for a skill without a tool)."""


SKILLS = [
    Skill(
        r"(?i)remember that (.+)",
        "remember",
        lambda m: {"add": m.group(1)[0].upper() + m.group(1)[1:].rstrip(".") + "."},
        lambda m, result: (
            f"I'll remember that: {_result_line(result)}" if _result_line(result) else "I couldn't keep it."
        ),
    ),
    Skill(
        r"(?i)what is my sister called",
        "search",
        lambda m: {"query": "sister called"},
        _found(r"sister is called (\w+)", "Your sister is called {}.", "I don't know what your sister is called."),
    ),
    Skill(
        r"(?i)what is my boat called",
        "search",
        lambda m: {"query": "boat called"},
        _found(r"boat is called (\w+)", "Your boat is called {}.", "I don't know what your boat is called."),
    ),
    Skill(
        r"(?i)serial number",
        "search",
        lambda m: {"query": "boiler serial number"},
        _found(r"serial number is ([A-Z0-9-]+)", "The boiler's serial number is {}.", "I couldn't find it."),
    ),
    Skill(r"(?i)^round (\d+): look up (.+)", "search", lambda m: {"query": m.group(2)}, _looked_up),
    Skill(
        r"(?i)remind me at (\d{1,2}:\d{2}) to (.+)",
        "schedule",
        lambda m: {"message": f"Remind the owner to {m.group(2).rstrip('.')}", "at": m.group(1), "title": m.group(2)},
        lambda m, result: f"I'll remind you at {m.group(1)}." if '"id"' in result else f"I couldn't: {result}",
    ),
    Skill(r"(?i)remind the owner to (.+)", None, lambda m: {}, lambda m, task: f"Time to {task.rstrip('.')}!"),
    Skill(r"(?i)tell me a story", None, lambda m: {}, lambda m, message: STORY),
    Skill(r"(?s)(.*)", None, lambda m: {}, lambda m, message: f"You said: {message}"),
]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


class Model:
    """The stand-in provider, what it was asked and what it answered; `slow` makes the next answer
    take its time (twenty seconds, in forty pieces), `pace` how every other answer streams."""

    def __init__(self, key: str) -> None:
        self.provider = StandInProvider(key=key)
        self.answers: list[str] = []
        self.slow = threading.Event()
        self.pace = PACE

    @property
    def origin(self) -> str:
        return self.provider.origin

    @property
    def requests(self) -> list[Recorded]:
        return self.provider.requests

    def start(self) -> Model:
        self.provider.start()
        return self

    def stop(self) -> None:
        self.provider.stop()

    def expect(self, calls: int) -> None:
        """The next `calls` requests are thought about (any more are answered "ok", which no test expects)."""
        self.provider.script(*([self.think] * calls))

    def answer(self, number: int, timeout: float = 60) -> str:
        """The model's `number`th answer (from 0), once it gave it."""
        wait_for(lambda: len(self.answers) > number, timeout, f"the model's answer #{number + 1}")
        return self.answers[number]

    def think(self, request: Recorded) -> Reply:
        messages: list[dict[str, Any]] = request.json.get("messages", [])
        asked = next((t for m in reversed(messages) if m.get("role") == "user" and not _context(t := _text(m))), "")
        skill, match = next((s, m) for s in SKILLS if (m := re.search(s.asked, asked)))
        if skill.tool is None:
            return self._say(skill.answer(match, match.group(1) if match.groups() else asked))
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            return self._say(skill.answer(match, _text(last)))
        if skill.tool not in request.tool_names:
            return self._say(f"I have no {skill.tool} tool here (I have: {', '.join(sorted(request.tool_names))}).")
        return Reply(tool_calls=[ToolCall(skill.tool, skill.arguments(match))])

    def _say(self, text: str) -> Reply:
        """An answer streamed in pieces, slowly enough that a chat shows it growing."""
        self.answers.append(text)
        if self.slow.is_set():
            self.slow.clear()
            return Reply(text=text, chunks=40, delay=0.5)
        return Reply(text=text, chunks=self.pace.chunks, delay=self.pace.delay)


HARNESS_CONTEXT = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"
"""OpenClaw adds its own context as a user message after the owner's: context, not what was asked."""


def _context(text: str) -> bool:
    return text.startswith(HARNESS_CONTEXT)
