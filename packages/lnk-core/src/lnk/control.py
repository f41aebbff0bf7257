"""Asking a running agent's supervisor, over its control socket (~/.config/lnk, 0600).

Every request goes through link_plugin's one client of the socket (`ControlClient`), the one a
channel's bridge asks the owner's questions with.
"""

from __future__ import annotations

import asyncio
from typing import Any

from link_plugin.approvals import Question
from link_plugin.control import ControlClient
from link_plugin.endpoint import EndpointError
from lnk.agents import Agent


def client(agent: Agent, timeout: float = 10.0) -> ControlClient:
    return ControlClient(str(agent.run.control), timeout)


def status(agent: Agent) -> dict[str, Any] | None:
    """The running agent's state; None when its supervisor doesn't answer."""
    try:
        return asyncio.run(client(agent).status())
    except EndpointError:
        return None


def waiting(agent: Agent) -> list[Question]:
    return asyncio.run(client(agent).waiting())


def answer(agent: Agent, question: str, allow: bool) -> bool:
    return asyncio.run(client(agent).answer(question, allow))
