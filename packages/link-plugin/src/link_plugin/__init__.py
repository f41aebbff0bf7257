"""link_plugin: the contract every lnk plugin and the core meet through.

Three contracts (harness adapter, memory engine, channel), the wire between a bridge and a
harness endpoint, and the helpers both sides use. Every change is additive: a new command has a
stated default for a plugin that doesn't answer it, a new field has a default.

The names below are imported when first used: `from link_plugin.errors import LinkError` costs
no pydantic, so a program's path that answers without a model (`lnk --version`) starts fast.
"""

from __future__ import annotations

from importlib import import_module

TYPE_CHECKING = False  # `typing` itself isn't loaded: a fast program's path may need none of it
if TYPE_CHECKING:
    from typing import Any

    from link_plugin.answers import Answer, parse_answer
    from link_plugin.contract import CONTRACT_VERSION, Command, Contract, Kind
    from link_plugin.errors import ContractError, ExitCode, LinkError, NotAnswered, PluginFailed

__version__ = "0.1.0"

_HOMES = {
    "Answer": "answers",
    "parse_answer": "answers",
    "CONTRACT_VERSION": "contract",
    "Command": "contract",
    "Contract": "contract",
    "Kind": "contract",
    "ContractError": "errors",
    "ExitCode": "errors",
    "LinkError": "errors",
    "NotAnswered": "errors",
    "PluginFailed": "errors",
}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        # A submodule (`from link_plugin import wire`) is found by the import system itself.
        raise AttributeError(f"module 'link_plugin' has no attribute {name!r}")
    return getattr(import_module(f"link_plugin.{home}"), name)
