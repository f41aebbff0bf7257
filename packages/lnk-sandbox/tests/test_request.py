"""`run --request` reads the core's request without pydantic: the same request as the model, or
a refusal naming the field, for every request the model is given here."""

from __future__ import annotations

import json
from typing import Any

import pytest
from lnk_sandbox.request import FIELDS, Request

from link_plugin.errors import ContractError
from link_plugin.sandbox import SandboxRequest

SOURCE = "the request /run/request.json"

GOOD: list[dict[str, Any]] = [
    {"agent": "main", "argv": ["true"]},
    {"agent": "main", "argv": ["sh", "-c", "echo hi"], "mode": "setup", "harness": "mini", "hosts": ["*"]},
    {
        "agent": "main",
        "mode": "harness",
        "harness": "openclaw",
        "argv": ["node", "gateway.js"],
        "env": {"OPENCLAW_HOME": "/home/me/Link/Agents/main/Harnesses/openclaw", "EMPTY": ""},
        "cwd": "/home/me/Link/Agents/main/Harnesses/openclaw",
        "writes": ["/home/me/Link/Agents/main/chats"],
        "reads": ["/usr/lib/node_modules"],
        "ports": [18800, 18801],
        "model_port": 11434,
        "tools": ["memory"],
        "wire_keys": False,
        "proxy_port": 18805,
    },
    {"agent": "main", "argv": ["engine"], "mode": "tool", "no_sandbox": False, "hosts": None, "tools": None},
    {"agent": "main", "argv": ["x"], "mode": "health", "ports": [], "cwd": None, "model_port": None},
    {"agent": "main", "argv": ["x"], "a_field_from_a_newer_core": {"anything": [1, 2]}},
]

BAD: list[tuple[dict[str, Any], str]] = [
    ({"argv": ["true"]}, "agent"),
    ({"agent": "main"}, "argv"),
    ({"agent": "main", "argv": []}, "argv"),
    ({"agent": "main", "argv": "true"}, "argv"),
    ({"agent": "main", "argv": ["true", 3]}, "argv"),
    ({"agent": 7, "argv": ["true"]}, "agent"),
    ({"agent": None, "argv": ["true"]}, "agent"),
    ({"agent": "main", "argv": ["true"], "mode": "root"}, "mode"),
    ({"agent": "main", "argv": ["true"], "env": ["A=b"]}, "env"),
    ({"agent": "main", "argv": ["true"], "env": {"A": 1}}, "env"),
    ({"agent": "main", "argv": ["true"], "env": None}, "env"),
    ({"agent": "main", "argv": ["true"], "writes": "/tmp"}, "writes"),
    ({"agent": "main", "argv": ["true"], "reads": [None]}, "reads"),
    ({"agent": "main", "argv": ["true"], "hosts": "example.com"}, "hosts"),
    ({"agent": "main", "argv": ["true"], "ports": [18800, "x"]}, "ports"),
    ({"agent": "main", "argv": ["true"], "ports": 18800}, "ports"),
    ({"agent": "main", "argv": ["true"], "model_port": "a lot"}, "model_port"),
    ({"agent": "main", "argv": ["true"], "no_sandbox": "please"}, "no_sandbox"),
    ({"agent": "main", "argv": ["true"], "wire_keys": None}, "wire_keys"),
    ({"agent": "main", "argv": ["true"], "tools": [["memory"]]}, "tools"),
    ({"agent": "main", "argv": ["true"], "proxy_port": 0}, "proxy_port"),
    ({"agent": "main", "argv": ["true"], "proxy_port": 65536}, "proxy_port"),
    ({"agent": "main", "argv": ["true"], "cwd": 5}, "cwd"),
    ({"agent": "main", "argv": ["true"], "harness": ["mini"]}, "harness"),
]


def test_every_field_of_the_model_is_read_with_its_default() -> None:
    assert set(FIELDS) == set(SandboxRequest.model_fields)
    least = Request({"agent": "main", "argv": ["true"]})
    model = SandboxRequest(agent="main", argv=["true"])
    assert {name: getattr(least, name) for name in FIELDS} == model.model_dump()


@pytest.mark.parametrize("data", GOOD)
def test_a_request_the_model_takes_reads_the_same(data: dict[str, Any]) -> None:
    model = SandboxRequest.model_validate(data)
    for text in (json.dumps(data), model.to_json()):
        read = Request.read(text, source=SOURCE)
        assert {name: getattr(read, name) for name in FIELDS} == model.model_dump(include=set(FIELDS))


@pytest.mark.parametrize(("data", "field"), BAD)
def test_a_request_the_model_refuses_is_refused_naming_the_field(data: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SandboxRequest.model_validate(data)
    with pytest.raises(ContractError, match=f"'{field}'") as refused:
        Request.read(json.dumps(data), source=SOURCE)
    assert str(refused.value).startswith(f"{SOURCE} broke the contract")


def test_every_problem_is_named_at_once() -> None:
    with pytest.raises(ContractError) as refused:
        Request.read(json.dumps({"argv": [], "ports": ["x"]}), source=SOURCE)
    assert all(f"'{name}'" in str(refused.value) for name in ("agent", "argv", "ports"))


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", '"a request"', b"\x80{}"])
def test_what_is_not_a_json_object_is_refused(text: str | bytes) -> None:
    with pytest.raises(ContractError, match="request"):
        Request.read(text, source=SOURCE)


def test_a_port_is_a_port_even_where_the_model_is_lax() -> None:
    """The core writes numbers as numbers and ports between 1 and 65535: anything else is a
    broken request, refused before a port is bound, though the model would coerce it."""
    for ports in (["18800"], [True], [0], [70000], [18800.0]):
        with pytest.raises(ContractError, match="'ports'"):
            Request.read(json.dumps({"agent": "main", "argv": ["true"], "ports": ports}), source=SOURCE)
