"""A Signal chat as the bridge shows things there: an answer (sent whole, typing meanwhile, the
steered mark as a reaction) and, in the owner's chat, a tool call's question.

Signal caps how often a message can be edited, so an answer is sent whole once written and never
edited (`Bridge(whole=True)`); the one edit the bridge makes is a question's final words once it
is answered. Signal has no buttons: a question is answered by the owner's yes or no. In a group,
an answer quotes the owner's message, so it's clear whom it answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from link_plugin.approvals import Question
from lnk_signal.messages import group_id
from lnk_signal.rpc import translated

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""A request to the running signal-cli: its method and parameters; its result."""


class SignalChat:
    """One chat: the owner's number, or a group; `message` is the owner's message answered there,
    as Signal names it (its author and timestamp), quoted by the answer in a group."""

    def __init__(self, call: Call, chat: str, message: tuple[str, int] | None = None) -> None:
        self._call = call
        self._group = group_id(chat)
        self._chat = chat
        self._message = message
        self._quote = message if self._group is not None else None

    def _to(self) -> dict[str, Any]:
        return {"groupId": self._group} if self._group is not None else {"recipient": [self._chat]}

    async def _request(self, method: str, **params: Any) -> Any:
        with translated():
            return await self._call(method, {**self._to(), **params})

    async def send(self, text: str) -> str:
        quoted = {"quoteAuthor": self._quote[0], "quoteTimestamp": self._quote[1]} if self._quote else {}
        sent = await self._request("send", message=text, **quoted)
        return str(sent["timestamp"])

    async def edit(self, message: str, text: str) -> None:
        await self._request("send", message=text, editTimestamp=int(message))

    async def ask(self, question: Question) -> str:
        return await self.send(question.wording())

    async def settle(self, message: str, text: str) -> None:
        """The question's final words, in its message."""
        await self.edit(message, text)

    async def typing(self) -> None:
        """Signal shows it for about fifteen seconds, or until the agent's message comes."""
        await self._request("sendTyping")

    async def mark(self, mark: str) -> None:
        if self._message is None:
            return
        author, timestamp = self._message
        await self._request("sendReaction", emoji=mark, targetAuthor=author, targetTimestamp=timestamp)
