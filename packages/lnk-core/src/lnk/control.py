"""Asking a running agent's supervisor, over its control socket (~/.config/lnk, 0600)."""

from __future__ import annotations

from typing import Any

import httpx

from lnk.agents import Agent
from lnk.approvals import Question

BASE = "http://lnk"


def client(agent: Agent, timeout: float = 10.0) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(agent.run.control)), base_url=BASE, timeout=timeout)


def async_client(agent: Agent, timeout: float = 10.0) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(uds=str(agent.run.control))
    return httpx.AsyncClient(transport=transport, base_url=BASE, timeout=timeout)


def status(agent: Agent) -> dict[str, Any] | None:
    try:
        with client(agent) as c:
            data: dict[str, Any] = c.get("/status").raise_for_status().json()
            return data
    except httpx.HTTPError:
        return None


def waiting(agent: Agent) -> list[Question]:
    with client(agent) as c:
        return [Question.model_validate(q) for q in c.get("/approvals").raise_for_status().json()]


def answer(agent: Agent, question: str, allow: bool) -> bool:
    with client(agent) as c:
        return c.post(f"/approvals/{question}", json={"allow": allow}).status_code == 200
