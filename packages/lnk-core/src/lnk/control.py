"""Asking a running agent's supervisor, over its control socket (~/.config/lnk, 0600)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from link_plugin.approvals import ApprovalsClient, Question
from lnk.agents import Agent

BASE = "http://lnk"


def client(agent: Agent, timeout: float = 10.0) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(agent.run.control)), base_url=BASE, timeout=timeout)


def status(agent: Agent) -> dict[str, Any] | None:
    try:
        with client(agent) as c:
            data: dict[str, Any] = c.get("/status").raise_for_status().json()
            return data
    except httpx.HTTPError:
        return None


def approvals(agent: Agent) -> ApprovalsClient:
    return ApprovalsClient(str(agent.run.control))


def waiting(agent: Agent) -> list[Question]:
    return asyncio.run(approvals(agent).waiting())


def answer(agent: Agent, question: str, allow: bool) -> bool:
    return asyncio.run(approvals(agent).answer(question, allow))
