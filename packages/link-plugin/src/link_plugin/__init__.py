"""link_plugin: the contract every lnk plugin and the core meet through.

Three contracts (harness adapter, memory engine, channel), the wire between a bridge and a
harness endpoint, and the helpers both sides use. Every change is additive: a new command has a
stated default for a plugin that doesn't answer it, a new field has a default.
"""

from link_plugin.answers import Answer, parse_answer
from link_plugin.contract import CONTRACT_VERSION, Command, Contract, Kind
from link_plugin.errors import ContractError, ExitCode, LinkError, NotAnswered, PluginFailed

__version__ = "0.1.0"

__all__ = [
    "CONTRACT_VERSION",
    "Answer",
    "Command",
    "Contract",
    "ContractError",
    "ExitCode",
    "Kind",
    "LinkError",
    "NotAnswered",
    "PluginFailed",
    "__version__",
    "parse_answer",
]
