"""A WhatsApp chat as the bridge shows things there: an answer (sent whole, split past WhatsApp's
65,536 characters), typing, the steered mark (a reaction), and in the owner's chat a tool call's
question, answered by a reply of yes or no (a linked device can't send buttons).

Every send carries a ref (`protocol`): the same for the same text sent again from the same
chat after a failure, so the engine sends it once even when it died before it answered. In a
group, an answer quotes the owner's message, so it's clear whom it answers.
"""

from __future__ import annotations

import hashlib
import secrets
from collections import Counter

from link_plugin.approvals import Question
from lnk_whatsapp.process import EngineProcess

LIMIT = 65536
"""WhatsApp's longest message, in characters."""


class WhatsAppChat:
    def __init__(
        self,
        engine: EngineProcess,
        chat: str,
        message: str | None = None,
        sender: str | None = None,
        *,
        quote: bool = False,
    ) -> None:
        self._engine = engine
        self._chat = chat
        self._message = message
        self._sender = sender
        self._quote = quote
        self._name = secrets.token_hex(6)
        self._sent: Counter[str] = Counter()
        """Texts sent from here, by digest: a text sent again after it went out is a new message."""

    def _ref(self, text: str) -> str:
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        return f"{self._name}:{digest}:{self._sent[digest]}"

    async def send(self, text: str) -> str:
        reply = await self._engine.call(
            "send", chat=self._chat, text=text, ref=self._ref(text), quote=self._message if self._quote else None
        )
        self._sent[hashlib.sha256(text.encode()).hexdigest()[:16]] += 1
        assert reply.message is not None, "a send names the message sent"
        return reply.message

    async def edit(self, message: str, text: str) -> None:
        await self._engine.call("edit", chat=self._chat, message=message, text=text)

    async def typing(self) -> None:
        """WhatsApp shows it for about ten seconds, or until a message comes."""
        await self._engine.call("typing", chat=self._chat)

    async def mark(self, mark: str) -> None:
        if self._message is None or self._sender is None:
            return
        await self._engine.call("react", chat=self._chat, message=self._message, sender=self._sender, emoji=mark)

    async def ask(self, question: Question) -> str:
        """The question's wording asks for a yes or a no, the answer a linked device can take."""
        return await self.send(question.wording())

    async def settle(self, message: str, text: str) -> None:
        """The question's end, sent as a new message: WhatsApp lets a message be edited only for a
        few minutes, and a question may wait longer."""
        await self.send(text)
