"""What the tool does, apart from MCP: each call checked, then written to what is due.

A call comes from one conversation, which the harness names in the call's `_meta`
(`link_plugin.wire.META_*`): its thread, how many hops its message came and its tools. So a
subagent is given its parent's tools or fewer (never one the parent doesn't have), a message
said for the conversation carries one hop more than the one that led to it, and a subagent's
answer goes back to the conversation that started it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from link_plugin import wire
from link_plugin.memory import ENV_AGENT_ID
from link_plugin.scheduler import ENV_AGENTS, ENV_NARROWS, Peer
from lnk_scheduler.rules import RuleError, first_time, parse_rule, parse_time
from lnk_scheduler.store import Due, Store, new_id

TEXT_MAX = 16_000
"""Characters of a message or task kept: a message, not a document."""


class CallError(ValueError):
    """A call that is not made: the message tells the model why and what to do instead."""


@dataclass(frozen=True)
class Caller:
    """The conversation that called, as the harness told it; each field None when it didn't say."""

    thread: str | None = None
    hops: int = 0
    tools: frozenset[str] | None = None

    @classmethod
    def of(cls, meta: Mapping[str, Any] | None) -> Caller:
        meta = meta or {}
        thread = meta.get(wire.META_THREAD)
        hops = meta.get(wire.META_HOPS, 0)
        tools = meta.get(wire.META_TOOLS)
        return cls(
            thread=thread if isinstance(thread, str) and thread else None,
            hops=hops if isinstance(hops, int) and hops >= 0 else 0,
            tools=frozenset(t for t in tools if isinstance(t, str)) if isinstance(tools, list) else None,
        )


@dataclass
class Settings:
    agent_id: str
    peers: dict[str, Peer]
    narrows: bool

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        raw = json.loads(env.get(ENV_AGENTS) or "{}")
        return cls(
            agent_id=env.get(ENV_AGENT_ID, "") or "agent",
            peers={name: Peer.model_validate(peer) for name, peer in raw.items()},
            narrows=env.get(ENV_NARROWS) == "1",
        )


def _text(text: str, what: str) -> str:
    text = text.strip()
    if not text:
        raise CallError(f"The {what} is empty: say what it is.")
    if len(text) > TEXT_MAX:
        raise CallError(f"The {what} is {len(text)} characters long; keep it under {TEXT_MAX}.")
    return text


class Scheduler:
    def __init__(self, store: Store, settings: Settings, now: Callable[[], datetime] | None = None) -> None:
        self.store = store
        self.settings = settings
        self.now = now or (lambda: datetime.now(UTC))

    def start_subagent(self, caller: Caller, task: str, tools: list[str] | None) -> Due:
        """A new conversation of this agent with `task`, its tools the caller's or fewer."""
        if caller.thread is None:
            raise CallError("The harness didn't say which conversation called, so a subagent has nowhere to answer.")
        narrowed: list[str] | None = None
        if tools is not None:
            asked = frozenset(tools)
            if caller.tools is not None and not asked <= caller.tools:
                wider = ", ".join(sorted(asked - caller.tools))
                raise CallError(f"A subagent can't have tools this conversation doesn't: {wider}.")
            narrowed = sorted(asked)
        elif caller.tools is not None:
            narrowed = sorted(caller.tools)
        if narrowed is not None and not self.settings.narrows:
            raise CallError(
                "This agent's harness can't narrow a conversation's tools, so a subagent with fewer tools "
                "can't be started (it would get all of them). Start it without naming tools only if it may use "
                "every tool."
            )
        ident = new_id()
        now = self.now()
        return self.store.add(
            Due(
                id=ident,
                kind="subagent",
                text=_text(task, "task"),
                sender=f"subagent:{caller.thread}",
                thread=f"subagent:{ident}",
                hops=caller.hops + 1,
                tools=narrowed,
                reply_to=caller.thread,
                at=now,
                start=now,
            )
        )

    def schedule(self, caller: Caller, message: str, at: str | None, repeat: str | None, title: str | None) -> Due:
        """A message to this agent at a time, or on a repeating rule from that time."""
        now = self.now()
        try:
            start = parse_time(at, now) if at else now
            if repeat:
                parse_rule(repeat, start)
            first = first_time(repeat, start)
        except RuleError as exc:
            raise CallError(str(exc)) from None
        if first is None:
            raise CallError(f"The rule {repeat!r} never comes from {start.isoformat()}.")
        ident = new_id()
        return self.store.add(
            Due(
                id=ident,
                kind="schedule",
                text=_text(message, "message"),
                sender=f"schedule:{ident}",
                thread=f"schedule:{ident}",
                hops=caller.hops + 1,
                at=first,
                start=start,
                rule=repeat.strip().removeprefix("RRULE:") if repeat else None,
                title=title.strip()[:200] if title and title.strip() else None,
            )
        )

    def schedules(self) -> list[Due]:
        return [due for due in self.store.all() if due.kind == "schedule"]

    def cancel(self, ident: str) -> Due:
        cancelled = self.store.cancel(ident.strip())
        if cancelled is None:
            raise CallError(f"There is no schedule {ident!r}: list the schedules for their ids.")
        return cancelled

    def message_agent(self, caller: Caller, agent: str, message: str) -> Due:
        """A message to another agent of the same owner here, said to it now as this agent's."""
        peer = self.settings.peers.get(agent)
        if peer is None:
            known = ", ".join(sorted(self.settings.peers)) or "none"
            raise CallError(f"There is no other agent named {agent!r} here (the owner's others: {known}).")
        now = self.now()
        sender = f"agent:{self.settings.agent_id}"
        return Store(Path(peer.state)).add(
            Due(
                id=new_id(),
                kind="agent",
                text=_text(message, "message"),
                sender=sender,
                thread=sender,
                hops=caller.hops + 1,
                at=now,
                start=now,
            )
        )
