"""Calling the model: OpenAI chat completions or Anthropic Messages, streamed, at the address given.

The harness holds no key. Behind Link's proxy the address is the provider's plain-http one and
the proxy adds the key; the HTTP client honours HTTP_PROXY. Only where the owner turned that off
(`lnk agent keys wire off`) do the settings hand it the key (`model.key`), sent as its provider
asks. Which API a model speaks is its provider's (`link_plugin.providers`); a local model server speaks OpenAI's.

The conversation travels in OpenAI's message shape (user, assistant with tool_calls, tool) and
is put in Anthropic's only on the way out.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from link_plugin import LinkError, sse
from link_plugin.harness import ModelRef
from link_plugin.providers import PROVIDERS
from lnk_harness.events import Asked
from lnk_harness.tls import DeferredTrust
from lnk_harness.tools import ToolSpec
from lnk_harness.window import encoded

ANTHROPIC_VERSION = "2023-06-01"
MAX_TOKENS = 8192
"""Anthropic's Messages API needs a cap on the answer's length; OpenAI's doesn't."""
JSON = "application/json"

Message = dict[str, Any]


class ModelError(LinkError):
    """The model could not be asked, or answered something that isn't an answer."""


class ModelUnreachable(ModelError):
    """The connection to the model failed or broke: the model failed, or the way to it is gone
    (way_out.py tells which in a sandbox)."""


@dataclass
class Step:
    """What one call to the model gave, once it finished."""

    text: str = ""
    calls: list[Asked] = field(default_factory=list)


def api_of(model: ModelRef) -> Literal["openai", "anthropic"]:
    provider = PROVIDERS.get(model.provider)
    return provider.api if provider is not None else "openai"


def new_http() -> httpx.AsyncClient:
    # trust_env: in the sandbox HTTP_PROXY names Link's proxy, which adds the key. The TLS context
    # (one, shared by the client and any proxy it mounts) reads its authorities at its first use.
    return httpx.AsyncClient(trust_env=True, verify=DeferredTrust(), timeout=httpx.Timeout(300.0, connect=15.0))


async def stream(
    http: httpx.AsyncClient, model: ModelRef, system: str, messages: list[Message], tools: list[ToolSpec]
) -> AsyncIterator[str | Step]:
    """The answer's text as it comes, then the whole step."""
    if api_of(model) == "anthropic":
        url, headers, body = _anthropic_request(model, system, messages, tools)
        parse = _anthropic_events
    else:
        url, headers, body = _openai_request(model, system, messages, tools)
        parse = _openai_events
    provider = PROVIDERS.get(model.provider)
    if model.key is not None and provider is not None:
        headers.update(provider.key_headers(model.key))
    try:
        async with http.stream("POST", url, headers=headers, content=body) as response:
            if response.status_code != 200:
                raw = (await response.aread()).decode(errors="replace")
                raise ModelError(f"the model at {url} answered {response.status_code}: {_error_text(raw)}")
            async for item in parse(_data(sse.aevents(response.aiter_bytes()))):
                yield item
    except httpx.TransportError as exc:
        raise ModelUnreachable(f"the model at {url} could not be reached: {type(exc).__name__}: {exc}") from exc
    except httpx.HTTPError as exc:
        raise ModelError(f"the model at {url} could not be asked: {type(exc).__name__}: {exc}") from exc


def _error_text(raw: str) -> str:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return raw[:500]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and "message" in error:
        return str(error["message"])[:500]
    return raw[:500]


async def _data(events: AsyncIterator[sse.Event]) -> AsyncIterator[dict[str, Any]]:
    """Each event's JSON object (OpenAI's closing `[DONE]` and empty events carry none)."""
    async for event in events:
        if not event.data or event.done:
            continue
        try:
            parsed = event.json()
        except ValueError as exc:
            raise ModelError(f"the model streamed something that is not JSON: {event.data[:200]!r}") from exc
        if isinstance(parsed, dict):
            yield parsed


# --- OpenAI chat completions ---------------------------------------------------------------


def _openai_request(
    model: ModelRef, system: str, messages: list[Message], tools: list[ToolSpec]
) -> tuple[str, dict[str, str], bytes]:
    fields: dict[str, Any] = {"model": model.name, "stream": True}
    if tools:
        fields["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.schema}}
            for t in tools
        ]
    # The window's messages as they were encoded when they joined it: only what is new is encoded here.
    said = ", ".join([encoded({"role": "system", "content": system}), *map(encoded, messages)])
    body = f'{json.dumps(fields, ensure_ascii=False)[:-1]}, "messages": [{said}]}}'
    return f"{model.url.rstrip('/')}/chat/completions", {"content-type": JSON}, body.encode()


async def _openai_events(chunks: AsyncIterator[dict[str, Any]]) -> AsyncIterator[str | Step]:
    step = Step()
    calls: dict[int, dict[str, str]] = {}
    async for chunk in chunks:
        if "error" in chunk:
            raise ModelError(f"the model failed mid-answer: {_error_text(json.dumps(chunk))}")
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if isinstance(text, str) and text:
                step.text += text
                yield text
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(int(call.get("index", len(calls))), {"id": "", "name": "", "arguments": ""})
                function = call.get("function") or {}
                slot["id"] = call.get("id") or slot["id"]
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
    step.calls = [Asked(**calls[index]) for index in sorted(calls)]
    yield step


# --- Anthropic Messages --------------------------------------------------------------------


def _anthropic_request(
    model: ModelRef, system: str, messages: list[Message], tools: list[ToolSpec]
) -> tuple[str, dict[str, str], bytes]:
    body: dict[str, Any] = {
        "model": model.name,
        "max_tokens": MAX_TOKENS,
        "stream": True,
        "system": system,
        "messages": to_anthropic(messages, with_tools=bool(tools)),
    }
    if tools:
        body["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.schema} for t in tools]
    headers = {"anthropic-version": ANTHROPIC_VERSION, "content-type": JSON}
    return f"{model.url.rstrip('/')}/messages", headers, json.dumps(body, ensure_ascii=False).encode()


def _input_of(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def to_anthropic(messages: list[Message], with_tools: bool = True) -> list[Message]:
    """OpenAI-shaped messages as Anthropic's: blocks, tool results in the user's turn, roles alternating.

    Anthropic refuses tool_use and tool_result blocks in a request that defines no tools, so a step
    without tools (none listed yet, or none that answer) tells the calls made before as text.
    """
    out: list[Message] = []
    names: dict[str, str] = {}
    for message in messages:
        role = message["role"]
        blocks: list[dict[str, Any]] = []
        if role == "tool":
            role = "user"
            call_id, content = message["tool_call_id"], message["content"]
            if with_tools:
                blocks.append({"type": "tool_result", "tool_use_id": call_id, "content": content})
            else:
                blocks.append({"type": "text", "text": f"[{names.get(call_id, 'the tool')} answered: {content}]"})
        else:
            if message.get("content"):
                blocks.append({"type": "text", "text": message["content"]})
            for call in message.get("tool_calls") or []:
                function = call["function"]
                names[call["id"]] = function["name"]
                if not with_tools:
                    blocks.append({"type": "text", "text": f"[called {function['name']} with {function['arguments']}]"})
                    continue
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": function["name"],
                        "input": _input_of(function["arguments"]),
                    }
                )
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"] += blocks
        else:
            out.append({"role": role, "content": blocks})
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "(the conversation so far)"}]})
    return out


async def _anthropic_events(chunks: AsyncIterator[dict[str, Any]]) -> AsyncIterator[str | Step]:
    step = Step()
    calls: dict[int, dict[str, str]] = {}
    async for event in chunks:
        kind = event.get("type")
        if kind == "error":
            raise ModelError(f"the model failed mid-answer: {_error_text(json.dumps(event))}")
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                calls[int(event.get("index", 0))] = {"id": block["id"], "name": block["name"], "arguments": ""}
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta" and delta.get("text"):
                step.text += delta["text"]
                yield delta["text"]
            elif delta.get("type") == "input_json_delta":
                index = int(event.get("index", 0))
                if index in calls:
                    calls[index]["arguments"] += delta.get("partial_json") or ""
    step.calls = [Asked(**calls[index]) for index in sorted(calls)]
    yield step
