"""The request `run` is given, read with the standard library alone.

`run --request FILE` starts every sandbox the core asks for (the harness, its setup steps, its
health check, the memory tool), so what it does before bubblewrap runs is paid on every one of
them. The request is `link_plugin.sandbox.SandboxRequest` (contract-spec/sandbox.md), the core
writes it with that model, and it is read back here with one strict check of each field instead
of the model: the same fields, defaults and limits, without importing pydantic (about a tenth of
a second, more than the rest of a start). It is strict where the model would coerce: a number
is a JSON number, never a string of digits, a flag is `true` or `false`. A field it doesn't know
is let through, as the model lets it through, since a newer core may send more. Anything else is
refused, naming the field, with a `ContractError` that `run` turns into its exit code 125.

`tests/test_request.py` holds it to the model: every field the model has, with its default, and
the same answer for each request in its table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from link_plugin.errors import ContractError
from link_plugin.sandbox_terms import MODES

TYPE_CHECKING = False  # `typing` isn't loaded on a run's path (link_plugin.records)
if TYPE_CHECKING:
    from link_plugin.sandbox import SandboxRequest
    from link_plugin.sandbox_terms import Mode

REQUIRED = object()
"""A field without a default: missing, it is named."""


class BadField(ValueError):
    """One field is not what the contract says."""


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise BadField(f"a string, not {_shown(value)}")
    return value


def _strings(value: object) -> list[str]:
    if not isinstance(value, list):
        raise BadField(f"a list of strings, not {_shown(value)}")
    return [_string(item) for item in value]


def _command(value: object) -> list[str]:
    argv = _strings(value)
    if not argv:
        raise BadField("empty: a command names at least its program")
    return argv


def _environment(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise BadField(f"an object of strings, not {_shown(value)}")
    return {name: _string(item) for name, item in value.items()}


def _mode(value: object) -> Mode:
    for mode in MODES:
        if value == mode:
            return mode
    raise BadField(f"one of {', '.join(MODES)}, not {_shown(value)}")


def _port(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 65535:
        raise BadField(f"a port (a whole number from 1 to 65535), not {_shown(value)}")
    return value


def _ports(value: object) -> list[int]:
    if not isinstance(value, list):
        raise BadField(f"a list of ports, not {_shown(value)}")
    return [_port(item) for item in value]


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise BadField(f"true or false, not {_shown(value)}")
    return value


def _or_none(read: Callable[[object], object]) -> Callable[[object], object]:
    def reading(value: object) -> object:
        return None if value is None else read(value)

    return reading


def _shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


FIELDS: dict[str, tuple[Callable[[object], object], object]] = {
    "agent": (_string, REQUIRED),
    "mode": (_mode, "harness"),
    "harness": (_or_none(_string), None),
    "argv": (_command, REQUIRED),
    "env": (_environment, {}),
    "cwd": (_or_none(_string), None),
    "writes": (_strings, []),
    "reads": (_strings, []),
    "hosts": (_or_none(_strings), None),
    "ports": (_ports, []),
    "model_port": (_or_none(_port), None),
    "no_sandbox": (_flag, False),
    "tools": (_or_none(_strings), None),
    "wire_keys": (_flag, True),
    "proxy_port": (_or_none(_port), None),
}
"""SandboxRequest's fields: how each is read, and its default (read too, so never shared)."""


class Request:
    """A `SandboxRequest`, checked field by field; its attributes are the model's."""

    __slots__ = tuple(FIELDS)

    agent: str
    mode: Mode
    harness: str | None
    argv: list[str]
    env: dict[str, str]
    cwd: str | None
    writes: list[str]
    reads: list[str]
    hosts: list[str] | None
    ports: list[int]
    model_port: int | None
    no_sandbox: bool
    tools: list[str] | None
    wire_keys: bool
    proxy_port: int | None

    def __init__(self, data: Mapping[str, object]) -> None:
        problems = []
        for name, (read, default) in FIELDS.items():
            if name not in data and default is REQUIRED:
                problems.append(f"missing required field '{name}'")
                continue
            try:
                setattr(self, name, read(data.get(name, default)))
            except BadField as exc:
                problems.append(f"field '{name}': {exc}")
        if problems:
            raise BadField("; ".join(problems))

    @classmethod
    def read(cls, text: str | bytes, *, source: str) -> Request:
        """The request in `text` (JSON), or a ContractError naming `source` and what is wrong."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ContractError(f"{source} is not JSON ({exc}).") from None
        if not isinstance(data, dict):
            raise ContractError(f"{source} is JSON but not an object.")
        try:
            return cls(data)
        except BadField as exc:
            raise ContractError(f"{source} broke the contract: {exc}.") from None

    @classmethod
    def of(cls, model: SandboxRequest) -> Request:
        """The same request as the model holds it (what `run --agent`, `check` and tests build)."""
        return cls(model.model_dump(mode="json"))

    def __repr__(self) -> str:
        return f"Request({', '.join(f'{name}={getattr(self, name)!r}' for name in FIELDS)})"
