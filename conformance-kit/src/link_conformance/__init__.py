"""link-conformance: the checks every lnk plugin passes, and the stand-ins they run against.

pytest --pyargs link_conformance --lnk-plugin lnk-<name>
"""

from link_conformance.provider import Reply, StandInProvider, ToolCall
from link_conformance.suites import ChannelConformance, HarnessConformance, MemoryConformance
from link_conformance.tools import StandInTools

__version__ = "0.1.0"

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
