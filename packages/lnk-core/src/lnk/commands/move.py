"""`lnk agent send`, `receive` and `sent`: an agent leaves this machine and arrives on another.

    lnk agent send work | ssh box lnk agent receive | lnk agent sent work

The stream is `lnk.movestream`'s; what each end does around it is `lnk.moves`'.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from link_plugin.errors import LinkError
from lnk.agents import DEFAULT_AGENT
from lnk.commands.common import AgentArg, JsonOpt, YesOpt, agent, emit, err, layout, say, terminal

PIPELINE = "lnk agent send NAME | ssh HOST lnk agent receive | lnk agent sent NAME"


def send(name: AgentArg = DEFAULT_AGENT) -> None:
    """Write the agent on stdout, for lnk agent receive on the machine it goes to."""
    from lnk.moves import send as write

    found = agent(name)
    if sys.stdout.isatty():
        raise LinkError("lnk agent send writes a stream, not text for a terminal.", f"Pipe it: {PIPELINE}")
    try:
        written = write(found, sys.stdout.buffer, say)
    except BrokenPipeError:
        # The reader went away: receive refused the stream (its own message says why) or the
        # connection dropped. Nothing arrived whole, so the agent is only here, stopped.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        raise LinkError(
            f"The other end stopped reading before {name} was sent whole: nothing moved, {name} stays here.",
            f"Its message says why; lnk agent start {name} starts it here again.",
        ) from None
    say(f"Sent {name} ({found.id}): {written.files} files, {written.bytes / 2**20:.1f} MiB.")
    say(f"Once it answers where it went, lnk agent sent {name} (fed receive's receipt) finishes the move here.")


def receive(
    yes: YesOpt = False,
    no_sandbox: Annotated[
        bool, typer.Option("--no-sandbox", help="Its first start here only: run the harness without a sandbox.")
    ] = False,
    allow_unsandboxed: Annotated[
        bool, typer.Option("--allow-unsandboxed", help="Answer yes to a harness's need for no sandbox at all.")
    ] = False,
) -> None:
    """Read an agent from stdin (lnk agent send's stream), put it here and start it; print the receipt."""
    from lnk.moves import receive as take
    from lnk.movestream import Reader

    if sys.stdin.isatty():
        raise LinkError("lnk agent receive reads a stream on stdin, from lnk agent send.", f"Pipe it: {PIPELINE}")
    lay = layout()
    staged = take(lay, Reader(0), say)  # stdin's bytes, into files as they come
    name = staged.manifest.agent.name
    say(f"Received {name} ({staged.manifest.agent.id}) from {staged.manifest.machine}.")

    # What starting it takes is imported once it is in place: a move waits for none of it.
    from concurrent.futures import ThreadPoolExecutor

    from rich.prompt import Confirm

    from lnk.commands.agent import start_agent
    from lnk.machine import load_machine
    from lnk.moves import Receipt, allow, settle
    from lnk.prepare import StartOptions
    from lnk.services import running

    # Onto the disk while it starts: the receipt below is what lets the machine it left delete it.
    flushed = ThreadPoolExecutor(1).submit(settle, lay)
    _stdin_from_terminal()
    asked = [w for w in staged.withheld if not w.startswith("tcp ")] if terminal() else []
    given = [
        w for w in asked if Confirm.ask(f"[yellow]Allow {name} {w} here, as where it came from?[/yellow]", console=err)
    ]
    allow(lay, name, given)
    left = [w for w in staged.withheld if w not in given]
    if left:
        say(
            f"[yellow]Not taken from the stream: {', '.join(left)}. A move never widens what an agent may do "
            f"here; lnk agent allow {name} gives them.[/yellow]"
        )
    found = start_agent(name, StartOptions(no_sandbox=no_sandbox, yes=yes, allow_unsandboxed=allow_unsandboxed))
    state = running(found)
    if state is None or found.id != staged.manifest.agent.id:
        raise LinkError(f"{name} was received but doesn't run here.", f"lnk agent logs {name} says why.")
    flushed.result()
    from lnk.runstate import read_spec

    spec = read_spec(found)
    receipt = Receipt(
        name=name,
        id=found.id,
        machine=load_machine(lay).name or "a machine",
        running=True,
        endpoint=spec.endpoint.url if spec and spec.endpoint else None,
    )
    typer.echo(receipt.model_dump_json())


def _stdin_from_terminal() -> None:
    """The stream is read: what start asks (a harness's needs) is asked on the terminal receive runs
    in, when there is one, and nowhere otherwise."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    os.dup2(fd, 0)
    os.close(fd)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115  (fd 0, kept open for the process's life)


def sent(
    name: AgentArg = DEFAULT_AGENT,
    as_json: JsonOpt = False,
    cancel: Annotated[
        bool, typer.Option("--cancel", help="The move is off: keep the agent here, and let it start again.")
    ] = False,
) -> None:
    """Finish a move: read receive's receipt on stdin; once the agent answers there, delete it here."""
    from lnk.moves import cancel_sending, finish_left, read_receipt

    found = agent(name)
    if cancel:
        was = cancel_sending(found)
        say(
            f"{name} stays here: lnk agent start {name} runs it again. If it arrived where it was sent, "
            f"delete it there (lnk agent delete {name}): one agent runs in one place."
            if was
            else f"{name} wasn't on its way anywhere: nothing to cancel."
        )
        return
    text = "" if sys.stdin.isatty() else sys.stdin.read()
    receipt = read_receipt(text, found)
    note = finish_left(found, receipt)
    if as_json:
        emit(note.model_dump(mode="json"))
        return
    kept = f" Its files are kept in {note.files}" if note.files else ""
    until = f" until {note.until:%Y-%m-%d}." if note.until else ("." if note.files else "")
    say(
        f"{name} ({found.id}) answers on {receipt.machine}; its settings, state and keys here are deleted.{kept}{until}"
    )
