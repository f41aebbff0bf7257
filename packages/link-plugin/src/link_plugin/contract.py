"""What every plugin answers first: its kind and the contract version it speaks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from link_plugin.answers import Answer

CONTRACT_VERSION = 1
"""The contract version this link-plugin speaks. Every change to it is additive."""


class Kind(StrEnum):
    HARNESS = "harness"
    MEMORY = "memory"
    CHANNEL = "channel"
    SANDBOX = "sandbox"
    BUCKET = "bucket"


class Contract(Answer):
    """`lnk-<name> contract`: who answers, and which contract version it speaks."""

    kind: Kind
    version: int
    name: str
    release: str | None = None
    """The plugin's own release (its wheel's version), when it has one."""


@dataclass(frozen=True)
class Command:
    """One command of a contract, as the caller, the kit and the spec see it."""

    name: str
    answer: type[Answer] | None
    """The answer's model; None for a command that runs rather than answers (a bridge)."""
    doc: str
    args: tuple[str, ...] = ()
    default: Callable[[], Answer] | None = None
    """What the caller assumes when a plugin doesn't answer; None means the command is required."""
    since: int = 1
    """The contract version that added it."""
    inputs: tuple[str, ...] = field(default=())
    """Environment variables and streams the caller hands it, for the spec."""

    @property
    def required(self) -> bool:
        return self.default is None


CONTRACT_COMMAND = Command(
    name="contract",
    answer=Contract,
    doc="The plugin's kind, name and the contract version it speaks.",
)
