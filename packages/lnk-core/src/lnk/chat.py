"""`lnk agent chat`: talk to the agent in the terminal as its owner, the answer streamed as it's written.

It goes the way a channel's bridge does: through the harness's endpoint, with the proof first, so
a program that took the port gets nothing. While an answer is written, a tool call waiting for the
owner's yes is asked here, and the answer goes to lnk's control socket, which no harness reaches.

Each line typed goes with a fresh key (`Link-Message-Id`). When the connection breaks (the
harness restarting), the line is sent again with the same key for up to a minute, so the harness
keeps it once: before any answer came, always; mid-answer, when the answer named its id (a
harness that keeps a message once per key hands the same answer over again, and the terminal
writes on where it broke off).
"""

from __future__ import annotations

import asyncio
import getpass
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from link_plugin.backoff import Backoff
from link_plugin.control import ControlClient
from link_plugin.endpoint import EndpointClient, EndpointError, EndpointUnreachable, new_message_id
from link_plugin.errors import LinkError

if TYPE_CHECKING:
    from rich.console import Console

    from link_plugin.approvals import Question
    from lnk.agents import Agent
    from lnk.runstate import RunSpec

CHANNEL = "terminal"
HOLD = 60.0
"""Seconds a line is sent again while the connection breaks (a harness starting again takes a few)."""
REWRITTEN = "(the agent wrote its answer again:)"


class Written:
    """One answer as the terminal shows it. Sent again after a break, the line gets the answer
    whole: what repeats the text shown is skipped and the rest written on, and an answer written
    otherwise (the turn answered afresh) is shown again after a note."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self.text = ""
        self._again = ""

    def again(self) -> None:
        """The answer comes again from its start."""
        self._again = ""

    def add(self, piece: str) -> None:
        self._again += piece
        if self.text.startswith(self._again):
            return
        if self._again.startswith(self.text):
            self._write(self._again[len(self.text) :])
        else:
            self._write(f"\n{REWRITTEN}\n{self._again}")
        self.text = self._again


def thread_of(user: str | None = None) -> str:
    """The owner's conversation in the terminal, `terminal:<user>` (`Link-Thread`)."""
    chat = re.sub(r"[^A-Za-z0-9_.@+=-]", "-", user or getpass.getuser())[:128] or "owner"
    return f"{CHANNEL}:{chat}"


class _Broke(Exception):
    def __init__(self, error: EndpointUnreachable, *, again: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.again = again


class Lines:
    """The terminal's lines, read in a thread of their own: messages and answers to questions alike."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._loop = loop
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            line = sys.stdin.readline()
            self._loop.call_soon_threadsafe(self.queue.put_nowait, line.rstrip("\n") if line else None)
            if not line:
                return

    async def next(self) -> str | None:
        return await self.queue.get()


class Chat:
    """The owner's chat with one agent: `name`'s endpoint, through `client`; the tool calls that
    wait for the owner, on its supervisor's `control` socket. What is said beside the answer goes
    to `err`, a console on stderr made when first written to (a message answered plainly writes
    none)."""

    def __init__(self, name: str, client: EndpointClient, control: Path, err: Console | None = None) -> None:
        self.name = name
        self._err = err
        self.client = client
        self.thread = thread_of()
        self.approvals = ControlClient(str(control))
        self.asked: set[str] = set()
        self.hold = HOLD

    @classmethod
    def of(cls, agent: Agent, spec: RunSpec, err: Console | None = None) -> Chat:
        """A chat with `agent`, running as `spec` says."""
        if spec.endpoint is None:
            raise LinkError(
                f"{agent.name}'s harness ({spec.harness}) answers no endpoint to chat with.",
                f"Talk to it on its channels: `lnk agent connect telegram {agent.name}`.",
            )
        return cls(agent.name, EndpointClient(spec.endpoint, agent), agent.run.control, err)

    @property
    def err(self) -> Console:
        if self._err is None:
            from rich.console import Console

            self._err = Console(stderr=True, highlight=False)
        return self._err

    async def ask_owner(self, lines: Lines, question: Question) -> None:
        from rich.markup import escape

        from link_plugin.approvals import reads_as

        self.err.print(f"\n[yellow]{escape(question.wording())}[/yellow] ", end="", highlight=False)
        allow = reads_as((await lines.next()) or "") is True
        await self.approvals.answer(question.id, allow)
        self.err.print("[green]allowed[/green]" if allow else "[red]refused[/red]")

    async def watch(self, lines: Lines) -> None:
        """Ask the owner each tool call that waits for them, while an answer is being written."""
        while True:
            # First a step later: no call waits before the model has answered the message with
            # one, so an answer written at once asks the supervisor nothing.
            await asyncio.sleep(0.3)
            try:
                found = await self.approvals.waiting()
            except EndpointError:
                found = []
            for question in found:
                if question.id not in self.asked:
                    self.asked.add(question.id)
                    await self.ask_owner(lines, question)

    async def say(self, text: str, lines: Lines, write: Callable[[str], None]) -> None:
        key = new_message_id()
        written = Written(write)
        deadline = time.monotonic() + self.hold
        backoff = Backoff(0.25, 2.0)
        told = False
        watcher = asyncio.create_task(self.watch(lines))
        try:
            while True:
                try:
                    await self._send(text, key, written)
                    break
                except _Broke as broke:
                    if not broke.again or time.monotonic() > deadline:
                        raise broke.error from None
                if not told:
                    self.err.print("\n[dim](the connection to the agent broke; sending the line again)[/dim]")
                    told = True
                await backoff.wait()
            write("\n")
        finally:
            watcher.cancel()

    async def _send(self, text: str, key: str, written: Written) -> None:
        """One try of the line, under its key. Raises `_Broke` when the connection breaks."""
        answered = named = False
        written.again()
        try:
            async with self.client.chat(text, self.thread, message_id=key) as reply:
                answered = True
                if reply.steered:
                    self.err.print("[dim](it joined the answer being written)[/dim]")
                    return
                named = reply.answer_id is not None
                async for piece in reply.deltas():
                    written.add(piece)
        except EndpointUnreachable as exc:
            # Before any answer the line is sent again; mid-answer only to a harness that named the
            # answer, which keeps a message once per key (another would keep the line twice).
            raise _Broke(exc, again=not answered or named) from exc

    async def run(self, messages: list[str]) -> int:
        lines = Lines(asyncio.get_running_loop())
        interactive = not messages and sys.stdin.isatty()

        def write(text: str) -> None:
            sys.stdout.write(text)
            sys.stdout.flush()

        if interactive:
            self.err.print(f"[dim]Talking to {self.name} as its owner. Ctrl-D ends.[/dim]")
        queue = list(messages)
        while True:
            if queue:
                text = queue.pop(0)
            elif messages:
                return 0
            else:
                if interactive:
                    self.err.print("[bold cyan]you>[/bold cyan] ", end="")
                line = await lines.next()
                if line is None:
                    return 0
                text = line
            if not text.strip():
                continue
            try:
                await self.say(text, lines, write)
            except EndpointError as exc:
                self.err.print(f"[red]{exc}[/red]")
                if not interactive:
                    return 1
