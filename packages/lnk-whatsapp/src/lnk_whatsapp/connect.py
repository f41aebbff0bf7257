"""`lnk-whatsapp connect` and `link`: say the risk, take the owner's number, link the device.

WhatsApp is linked as a device of an account, as WhatsApp Web is, not through Meta's business
API: no business account and no public address, at a small risk to the number (WhatsApp may
restrict an account it takes for automated), which is said before anything is linked. The owner
is the number typed here, so no code is sent: only that number is ever answered. The account
linked may be the owner's own (they write to the agent in their chat with themselves) or a
number of the agent's (safer: the risk is to it).

Numbers are typed in the terminal, or read from stdin one a line with `--token-stdin` (the owner's,
then the one to link, empty for a QR code).
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

from link_plugin.channel import Connected
from link_plugin.errors import LinkError
from link_plugin.plugin import ChannelContext, say
from lnk_whatsapp import linking
from lnk_whatsapp.section import Section, identity, number

RISK = (
    "WhatsApp is linked as a device of a WhatsApp account, as WhatsApp Web is, not through Meta's "
    "business API: no business account and no public address are needed, but WhatsApp may restrict "
    "a number it takes for automated. A number of the agent's own keeps that risk off yours."
)
OWNER = "Your WhatsApp number, with its country code (the agent answers it alone)"
ACCOUNT = "The WhatsApp number to link for the agent (Enter: scan a QR code instead)"


def folder(ctx: ChannelContext) -> Path:
    """The channel's folder Link gives (LNK_CHANNEL_DIR), where the device's keys are kept."""
    if ctx.folder is None:
        raise LinkError(
            "no folder to keep the linked device in (LNK_CHANNEL_DIR)",
            "Run `lnk agent connect whatsapp`: Link gives the channel a folder of the agent's.",
        )
    return ctx.folder


def asked(prompt: str, stdin: bool) -> str:
    """One answer from the terminal, or the next line of stdin."""
    if stdin:
        return sys.stdin.readline().strip()
    if not sys.stdin.isatty():
        raise LinkError(
            "there is no terminal to ask for the numbers", "Pass them on stdin, one a line, with --token-stdin."
        )
    print(f"{prompt}: ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip()


def link_here(ctx: ChannelContext, stdin: bool = False) -> str:
    """Link the device into the channel's folder (the account typed, or a QR code); its number."""
    typed = asked(ACCOUNT, stdin)
    return asyncio.run(linking.link(folder(ctx), number(typed) if typed else None))


def run(ctx: ChannelContext, stdin: bool) -> Connected:
    say(RISK)
    owner = number(asked(OWNER, stdin))
    account = link_here(ctx, stdin)
    if identity(account) in ctx.taken:
        forget(folder(ctx))
        raise LinkError(
            f"another agent here has +{account} linked: WhatsApp sends its messages to every device",
            "Remove the device just added in WhatsApp, Linked devices, and link a number of this agent's own.",
        )
    say(f"Paired: the agent answers +{owner} on WhatsApp, and nobody else.")
    return Connected(identity=identity(account), section=Section(owner=owner, account=account).model_dump())


def forget(place: Path) -> None:
    """The device's keys and everything else of the channel's, gone."""
    if place.exists():
        shutil.rmtree(place)
    place.mkdir(mode=0o700, parents=True, exist_ok=True)
