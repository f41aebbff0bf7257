"""A plain-http forward proxy standing in for Link's: it maps a provider's host to a local upstream
and adds the key, as Link's proxy does outside the sandbox. It records what the harness sent it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from link_conformance.serving import Served


class KeyAddingProxy:
    def __init__(self, upstreams: dict[str, str], key: str) -> None:
        self.upstreams = upstreams
        self.key = key
        self.seen: list[tuple[str, dict[str, str]]] = []
        self._served = Served(self)

    @property
    def url(self) -> str:
        return self._served.origin

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        target = urlsplit(scope["path"])
        self.seen.append((scope["path"], dict(request.headers)))
        upstream = self.upstreams.get(target.hostname or "")
        if upstream is None:
            await Response("not a provider this proxy knows", status_code=403)(scope, receive, send)
            return
        headers = {k: v for k, v in request.headers.items() if k not in ("host", "content-length")}
        headers["authorization"] = f"Bearer {self.key}"
        headers["x-api-key"] = self.key
        client = httpx.AsyncClient(trust_env=False, timeout=30)
        upstream_request = client.build_request(
            request.method, upstream + target.path, headers=headers, content=await request.body()
        )
        answer = await client.send(upstream_request, stream=True)

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in answer.aiter_raw():
                    yield chunk
            finally:
                await answer.aclose()
                await client.aclose()

        content_type = answer.headers.get("content-type", "application/json")
        await StreamingResponse(body(), status_code=answer.status_code, media_type=content_type)(scope, receive, send)

    def __enter__(self) -> KeyAddingProxy:
        self._served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._served.stop()
