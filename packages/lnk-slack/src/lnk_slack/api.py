"""The Slack Web API and Socket Mode through slack-sdk's async clients: where they point, and
Slack's errors in Link's terms.

`LNK_SLACK_API` points both elsewhere than Slack (the tests' fake): the Web API's base URL. The
Socket Mode URL needs no setting of its own: `apps.connections.open` hands it out, as Slack's does.
The clients retry nothing themselves: every call goes through the bridge's one retry
(`link_plugin.bridge.retry`), which honours Slack's `Retry-After`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.web.async_client import AsyncWebClient

from link_plugin.bridge.retry import Interrupted, RetryLater

ENV_API = "LNK_SLACK_API"
DEFAULT_API = "https://slack.com/api/"
LIMIT = 4000
"""The longest message Slack recommends (it takes up to 40,000, truncated)."""
TIMEOUT = 15
"""Seconds to wait for Slack's answer to a call; a call timed out is retried."""
REVOKED = {"invalid_auth", "account_inactive", "token_revoked", "token_expired", "not_authed"}
"""Slack's errors for a token that no longer works."""


def api_base() -> str:
    return os.environ.get(ENV_API, DEFAULT_API).rstrip("/") + "/"


def web_client(token: str, *, timeout: int = TIMEOUT) -> AsyncWebClient:
    return AsyncWebClient(token=token, base_url=api_base(), timeout=timeout, retry_handlers=[])


def socket_client(app_token: str, web: AsyncWebClient) -> SocketModeClient:
    """Slack's Socket Mode client (aiohttp), opening its connection with `apps.connections.open`."""
    return SocketModeClient(app_token, web_client=web)


def error(exc: SlackApiError) -> str:
    """Slack's error code (`invalid_auth`, `ratelimited`, ...)."""
    data = getattr(exc.response, "data", None)
    return str(data.get("error", "")) if isinstance(data, dict) else ""


def _status(exc: SlackApiError) -> int:
    response = exc.response
    return int(getattr(response, "status_code", None) or getattr(response, "status", 0) or 0)


@contextmanager
def translated() -> Iterator[None]:
    """Flood control and network errors as Link's bridge retries them."""
    try:
        yield
    except SlackApiError as exc:
        if _status(exc) == 429 or error(exc) == "ratelimited":
            headers = getattr(exc.response, "headers", None) or {}
            raise RetryLater(float(headers.get("Retry-After", headers.get("retry-after", 1)))) from exc
        if _status(exc) >= 500:
            raise Interrupted(f"Slack answered {_status(exc)}") from exc
        raise
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise Interrupted(f"{type(exc).__name__}: {exc}") from exc
