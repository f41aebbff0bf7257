"""Tool calls waiting for the owner's yes or no.

A call not in its server's "don't ask first" list waits here until the owner answers it through
lnk's control socket: a channel's bridge asks in the owner's chat, `lnk agent chat` in the
terminal, `lnk agent approve` from any other. The socket is in ~/.config/lnk, which no sandbox
reaches, so a harness can't answer for the owner; the question's ID is never shown to it either.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from link_plugin.approvals import Question
from link_plugin.waits import within

TIMEOUT = 300.0
"""How long a call waits for the owner before it is refused."""


class Approvals:
    def __init__(self, timeout: float = TIMEOUT) -> None:
        self.timeout = timeout
        self._waiting: dict[str, tuple[Question, asyncio.Future[bool]]] = {}

    async def ask(self, tool: str, call: str, arguments: dict[str, Any]) -> bool | None:
        """True or False as the owner answered; None when nobody answered in time."""
        question = Question(id=secrets.token_hex(4), tool=tool, call=call, arguments=arguments)
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting[question.id] = (question, answer)
        try:
            return await within(answer, self.timeout)
        except TimeoutError:
            return None
        finally:
            self._waiting.pop(question.id, None)

    def waiting(self) -> list[Question]:
        return [question for question, _ in self._waiting.values()]

    def answer(self, question_id: str, allow: bool) -> bool:
        found = self._waiting.get(question_id)
        if found is None or found[1].done():
            return False
        found[1].set_result(allow)
        return True
