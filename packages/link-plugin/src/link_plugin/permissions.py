"""The permissions a sandbox grants by name, and what is on by default.

A need or a grant naming anything else is refused, so a typo never runs a harness with less
than it needs, or more than it said.
"""

from __future__ import annotations

from enum import StrEnum


class Permission(StrEnum):
    NETWORK = "network"
    DEVELOPER_TOOLS = "developer-tools"
    OPEN = "open"
    READ_HOME = "read-home"
    LOCALHOST = "localhost"
    LAN = "lan"
    UNSANDBOXED = "unsandboxed"


DEFAULT_ON: frozenset[Permission] = frozenset({Permission.NETWORK, Permission.DEVELOPER_TOOLS})
"""On for every agent until denied."""

NAMES: frozenset[str] = frozenset(p.value for p in Permission)
