"""`lnk-signal connect`: say the risk, take the owner's number, install signal-cli, link it as a
device, and greet the owner.

The agent answers through a Signal account of its own (a second number), linked as a device the
way Signal Desktop is: no code to send, since the owner is the number typed at the terminal, and
nobody else is ever answered. connect installs signal-cli in the channel's folder if it isn't
there (`install`), links the device there (`link`), refuses an account another agent here has
(two devices answering one account would both answer) and the owner's own number as the agent's
(the agent would be talking to itself), checks the owner's number is on Signal, and sends the
owner a first message from the agent, so the chat is there on their phone.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from pathlib import Path

from link_plugin.channel import Connected
from link_plugin.errors import LinkError
from link_plugin.plugin import say
from lnk_signal.link import link
from lnk_signal.program import MANUAL, ensure
from lnk_signal.rpc import Gone, RpcError, running
from lnk_signal.section import DEVICE, Section, identity

NUMBER = re.compile(r"\+[1-9][0-9]{6,14}")
"""A phone number as Signal knows it: + and the country code, then the number (E.164)."""
RISK = (
    "Signal: the agent is linked as a device of a Signal account, as Signal Desktop is, through signal-cli, "
    "an unofficial client (GPL-3.0) that runs as its own program. It reads and sends as that account, and its "
    "keys stay in this agent's channel folder. Signal may limit an account it takes for automated. Give the agent "
    "a number of its own, not yours: you'll link it from the phone that number is on."
)
HELLO = "Hello from your agent: this Signal account answers you, and only you."


def ask_number(number_stdin: bool) -> str:
    """The owner's number, typed at the terminal (or a line on stdin), in its E.164 spelling."""
    if not number_stdin and not sys.stdin.isatty():
        raise LinkError("there is no terminal to ask for your number", "Pass it on stdin with --token-stdin.")
    if not number_stdin:
        print("Your Signal number, with its country code (e.g. +14155550123): ", end="", file=sys.stderr, flush=True)
    typed = sys.stdin.readline()
    number = re.sub(r"[\s().-]", "", typed)
    if number.startswith("00"):
        number = "+" + number[2:]
    if not NUMBER.fullmatch(number):
        raise LinkError(
            f"{typed.strip()!r} doesn't look like a phone number with its country code",
            "Type it as Signal shows it, with + and the country code, e.g. +14155550123.",
        )
    return number


async def connect(home: Path, owner: str, taken: frozenset[str], agent: str) -> Connected:
    signal_cli = ensure(home, say)
    account = await link(signal_cli, home, f"Link ({agent})", say)
    if identity(account) in taken or account == owner:
        shutil.rmtree(home / DEVICE, ignore_errors=True)
        mine = account == owner
        raise LinkError(
            f"{account} is your own number: the agent needs one of its own"
            if mine
            else f"another agent here has the Signal account {account}: two devices would both answer",
            "Remove the device just linked on the phone (Signal › Settings › Linked devices), then connect again "
            "and link the phone of the agent's own number.",
        )
    try:
        argv = signal_cli.command(home, "jsonRpc", MANUAL, account=account)
        async with running(argv, signal_cli.environment()) as cli:
            statuses = await cli.call("getUserStatus", {"recipient": [owner, account]})
            found = {str(s.get("recipient")): s for s in statuses if isinstance(s, dict)}
            if not found.get(owner, {}).get("isRegistered"):
                raise LinkError(
                    f"{owner} isn't on Signal", "Check your number (with its country code), then connect again."
                )
            await cli.call("send", {"recipient": [owner], "message": HELLO})
    except (RpcError, Gone, TimeoutError) as exc:
        raise LinkError(f"signal-cli couldn't reach Signal ({exc})", "Check the network, then connect again.") from None
    section = Section(
        account=account,
        account_uuid=str(found.get(account, {}).get("uuid") or ""),
        owner=owner,
        owner_uuid=str(found[owner].get("uuid") or ""),
    )
    say(f"Linked {account} for {agent}: it answers {owner}, and only {owner}.")
    return Connected(identity=identity(account), section=section.model_dump())


def run(home: Path, agent: str, number_stdin: bool, taken: frozenset[str]) -> Connected:
    """The risk said first, before the number is even asked; then the rest."""
    say(RISK)
    return asyncio.run(connect(home, ask_number(number_stdin), taken, agent))
