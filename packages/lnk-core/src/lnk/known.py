"""The names Link knows: its plugins (harnesses in KNOWN, memory engines in MEMORIES, channels),
the agent a name-less command means, and the names kept for Link's own services.

A plugin not in these lists but on PATH as `lnk-<name>` plugs in all the same; the lists only say
which names Link itself ships, so an unknown name can be told from a typo.
"""

from __future__ import annotations

KNOWN: dict[str, str] = {
    "link": "lnk-harness",
    "openclaw": "lnk-openclaw",
    "hermes": "lnk-hermes",
    "deepseek": "lnk-deepseek",
}
"""Harness name -> its adapter's executable."""

DEFAULT_AGENT = "main"
"""The first `lnk agent start` makes main: most people have one agent and never name it."""

DEFAULT_HARNESS = "link"
"""The harness of an agent whose settings name none: Link Harness."""

MEMORIES: dict[str, str] = {"link": "lnk-link-memory", "qmd": "lnk-qmd"}
"""Memory engine name -> its executable."""

CHANNELS: dict[str, str] = {name: f"lnk-{name}" for name in ("telegram", "slack", "discord", "whatsapp", "signal")}
"""Link's own channels -> their plugin's executable."""

RESERVED_PREFIXES = ("link.", "lnk-")
"""Names of Link's own services: nothing else may claim them."""


def channel_executable(name: str) -> str:
    return CHANNELS.get(name, f"lnk-{name}")


def reserved(name: str) -> bool:
    return name.startswith(RESERVED_PREFIXES)
