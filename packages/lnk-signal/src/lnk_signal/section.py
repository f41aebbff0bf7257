"""The channel's section in the agent's settings: the linked account and its owner, no secrets
(the device's keys are in the channel's folder, `device/`)."""

from __future__ import annotations

from pydantic import BaseModel

TITLE = "Signal"
DEVICE = "device"
"""signal-cli's `--config` folder in the channel's folder: the linked device's keys, what a move carries."""


class Section(BaseModel):
    account: str
    """The number of the Signal account linked as a device: the agent's number."""
    account_uuid: str = ""
    """Its id on Signal (ACI), as a mention of it names it."""
    owner: str
    """The owner's number, typed at the terminal: nobody else is answered."""
    owner_uuid: str = ""
    """The owner's id on Signal (ACI), for a message that comes without their number."""


def identity(account: str) -> str:
    """What makes a Signal account one agent's alone (LNK_CHANNEL_TAKEN)."""
    return f"signal:{account}"
