"""Linking the agent as a device of a WhatsApp account, as WhatsApp Web is linked: by a pair code
typed on the phone (for a number given), or a QR code shown in the terminal and scanned.

The engine does it in the channel's folder, where the device's keys stay; this asks it for the
pair code or shows its QR codes (a new one every so often, as WhatsApp rotates them) until the
phone accepts the device, and says how it went. A device linked already is said so, not linked
again.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import segno

from link_plugin.errors import LinkError
from link_plugin.plugin import say
from lnk_whatsapp.process import EngineProcess

WAIT = 300.0
"""Seconds the phone has to accept the device."""


def _qr(code: str) -> str:
    shown = io.StringIO()
    segno.make_qr(code).terminal(out=shown, compact=True)
    return shown.getvalue()


async def link(folder: Path, phone: str | None, *, wait: float = WAIT) -> str:
    """Link the device in `folder` (by a pair code for `phone`, or a QR code); the account's number."""
    engine = EngineProcess(folder)
    await engine.start()
    try:
        async with asyncio.timeout(wait):
            return await _linking(engine, phone)
    except TimeoutError:
        raise LinkError(
            f"the phone didn't accept the device within {wait / 60:g} minutes",
            "Run it again, and have the phone at hand: WhatsApp, Settings, Linked devices, Link a device.",
        ) from None
    finally:
        await engine.stop()


async def _linking(engine: EngineProcess, phone: str | None) -> str:
    asked = False
    while (event := await engine.events.get()) is not None:
        if event.event == "ready":
            say(f"The device is linked already, to +{event.me[0]}.")
            return event.me[0]
        if event.event == "linked":
            say(f"Linked to +{event.me[0]}.")
            return event.me[0]
        if event.event == "qr" and phone is not None and not asked:
            asked = True
            code = (await engine.call("pair", phone=phone)).code
            say(
                f"On the phone with +{phone}: WhatsApp, Settings, Linked devices, Link a device, "
                f"Link with phone number instead, then type this code: {code}"
            )
        elif event.event == "qr" and phone is None and event.code:
            say(f"On the phone: WhatsApp, Settings, Linked devices, Link a device, and scan this:\n{_qr(event.code)}")
        elif event.event == "disconnected" and event.why:
            say(f"(WhatsApp: {event.why})")
        elif event.event == "logged_out":
            raise LinkError("WhatsApp refused to link the device", "Try again: Linked devices, Link a device.")
    raise LinkError(
        f"the WhatsApp engine ended while linking (exit {engine.returncode})",
        "Run it again; if it keeps ending, its words are above.",
    )
