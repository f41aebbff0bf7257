"""link-conformance: the checks every lnk plugin passes, and the stand-ins they run against.

pytest --pyargs link_conformance --lnk-plugin lnk-<name>

The names below are imported when first used, so lnk-mini's console scripts (link_conformance.mini)
answer without loading pytest and the MCP SDK.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from link_conformance.provider import Reply, StandInProvider, ToolCall
    from link_conformance.suites import ChannelConformance, HarnessConformance, MemoryConformance
    from link_conformance.tools import StandInTools

__version__ = "0.1.0"

_HOMES = {
    "ChannelConformance": "suites",
    "HarnessConformance": "suites",
    "MemoryConformance": "suites",
    "Reply": "provider",
    "StandInProvider": "provider",
    "ToolCall": "provider",
    "StandInTools": "tools",
}

__all__ = [
    "ChannelConformance",
    "HarnessConformance",
    "MemoryConformance",
    "Reply",
    "StandInProvider",
    "StandInTools",
    "ToolCall",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'link_conformance' has no attribute {name!r}")
    return getattr(import_module(f"link_conformance.{_HOMES[name]}"), name)
