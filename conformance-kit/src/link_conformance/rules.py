"""The rules the kit checks, each with the words a failure prints."""

from __future__ import annotations

RULES: dict[str, str] = {
    "contract": "`contract` answers its kind, name and a contract version of 1 or more",
    "answers": "every command answers JSON its model accepts, or nothing (the default applies)",
    "steps": "install and configure succeed (ok: true) on a fresh agent",
    "harness-describe": (
        "`describe`, given only LNK_PORT, answers as each command it describes, and names exactly"
        " the commands the adapter answers"
    ),
    "streams": "the endpoint streams an answer as chat.completion.chunk events, in more than one piece",
    "key": "the endpoint refuses a request without its key (401) before the model sees it",
    "proof": "the endpoint answers POST /_link/proof with HMAC-SHA256(endpoint key, challenge), never the key",
    "agent": "a request naming an agent the process doesn't run is refused before the model is called",
    "tools": "Link-Tools narrows a conversation's tools, and a later list only intersects",
    "told": "a harness that narrows tells each tool call its conversation's tools (and thread, hops) in _meta",
    "steer": "a message while a turn runs gets 202 + Link-Steered and a completion with no content (streamed or "
    "whole, as asked), and its answer comes on the first request",
    "answer-id": "Link-Answer-Id in the head of every answer is every chunk's (or the completion's) id, the id a "
    "steered message gets, and the id /_link/recover hands the answer over by",
    "once": "a message sent again with its Link-Message-Id is kept once: answered again by the same id, the model "
    "never asked again nor shown it twice; a malformed key is refused with 400",
    "memory-command": "`command <folder> <state>` answers an argv that serves MCP over stdio",
    "memory-tools": "every call named in no_ask is a tool the engine lists",
    "memory-notes": "an engine claims no notes file when Link names none",
    "describe": "`describe` answers a title, unique secret fields and its hosts",
    "bridge-proof": "a bridge never sends the endpoint key to a program that fails the proof",
    "bridge-recover": "a bridge asks /_link/recover, with the key, once the endpoint proves itself",
    "bridge-message-id": "a bridge sends each message with a well-formed Link-Message-Id of its own, and the same "
    "one when it sends the message again after the connection broke before any answer",
    "bridge-groups": "in a group a bridge carries only its owner's messages that mention the bot (a reply to it "
    "is no mention), each group a conversation of its own",
    "bridge-shown-once": "a bridge shows each answer once: one it showed (its Link-Answer-Id), handed over again "
    "by recovery after the bridge restarted, is confirmed and not shown again",
    "fixtures": "answers written for an older contract version still parse with today's models",
}


def broken(rule: str, detail: str) -> str:
    """An assertion message naming the rule that was broken."""
    return f"conformance rule '{rule}' broken: {RULES[rule]}.\n  {detail}"
