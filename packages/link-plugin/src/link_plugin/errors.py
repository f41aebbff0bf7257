"""Errors and exit codes shared by every plugin and every caller of one."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """How a plugin executable ends. Documented in contract-spec/README.md."""

    ANSWERED = 0
    """One JSON answer is on stdout."""
    FAILED = 1
    """The command ran and failed; stderr says why, stdout may hold {"error": ...}."""
    USAGE = 2
    """The arguments were wrong (or the command is unknown to an older plugin)."""
    NOT_ANSWERED = 3
    """The plugin knows the command but does not answer it: the caller uses the default."""


class LinkError(Exception):
    """An error a person can act on: what was wrong, and what to do."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n{self.hint}" if self.hint else self.message


class ContractError(LinkError):
    """An answer that breaks the contract: unparseable, or missing a required field."""


class PluginFailed(LinkError):
    """A plugin command that has no default ended without an answer."""


class NotAnswered(Exception):
    """Raised by a plugin method to say it does not answer this command."""
