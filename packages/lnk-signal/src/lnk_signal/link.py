"""Linking signal-cli as a device of a Signal account, as Signal Desktop is linked.

    lnk-signal cli link [--into <home>]

signal-cli runs in its multi-account mode (`jsonRpc` without an account) with the device's folder
in `home`: `startLink` gives a `sgnl://linkdevice?...` link, shown in the terminal as a QR code
and as text; on the phone, Signal › Settings › Linked devices › Link new device scans it, and
`finishLink`, which waits for the phone, answers with the account's number. A folder already
linked is not linked again: its account is the answer.
"""

from __future__ import annotations

import io
from pathlib import Path

import segno

from link_plugin.errors import LinkError
from lnk_signal.install import Say
from lnk_signal.program import MANUAL, Program
from lnk_signal.rpc import Gone, RpcError, running

LINK_WAIT = 600.0
"""Seconds to wait for the phone to scan the link (Signal lets a link lapse sooner)."""


def qr(link: str) -> str:
    """The link as a QR code a terminal shows (two rows of modules a line)."""
    drawn = io.StringIO()
    segno.make(link, error="l").terminal(out=drawn, compact=True)
    return drawn.getvalue().rstrip("\n")


async def link(program: Program, home: Path, device: str, say: Say) -> str:
    """The account the device in `home` is linked to, linking it first if it isn't."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        async with running(program.command(home, "jsonRpc", MANUAL), program.environment()) as cli:
            accounts = await cli.call("listAccounts")
            if accounts:
                return str(accounts[0]["number"])
            started = await cli.call("startLink")
            uri = str(started["deviceLinkUri"])
            say(qr(uri))
            say(f"On your phone: Signal › Settings › Linked devices › Link new device, and scan this code.\n{uri}")
            finished = await cli.call("finishLink", {"deviceLinkUri": uri, "deviceName": device}, timeout=LINK_WAIT)
            return str(finished["number"])
    except RpcError as exc:
        raise LinkError(
            f"Signal didn't link the device ({exc.message})",
            "Run it again and scan the new code within a minute or two.",
        ) from None
    except (Gone, TimeoutError) as exc:
        raise LinkError(
            f"signal-cli stopped before the device was linked ({exc or 'no phone scanned the code'})",
            "Run it again; its log is above.",
        ) from None
