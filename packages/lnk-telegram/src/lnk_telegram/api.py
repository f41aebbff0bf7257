"""The Bot API through python-telegram-bot: the client, where it points, and its errors in Link's terms.

`LNK_TELEGRAM_API` points the client elsewhere than Telegram (a local Bot API server, or a
test's stand-in); the client adds `/bot<token>/<method>`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from telegram import Bot
from telegram.error import BadRequest, NetworkError, RetryAfter
from telegram.request import HTTPXRequest

from link_plugin.bridge.retry import Interrupted, RetryLater

ENV_API = "LNK_TELEGRAM_API"
DEFAULT_API = "https://api.telegram.org"
LIMIT = 4096
"""Telegram's longest message, in UTF-16 code units."""

_CONNECTIONS = 32
"""Answers stream side by side, each editing its own message."""
TIMEOUT = 15.0
"""Seconds to wait for Telegram's answer to a call; a call timed out is retried."""

# retry_after as a timedelta, the library's coming default, rather than a deprecated int.
os.environ.setdefault("PTB_TIMEDELTA", "1")


def api_base() -> str:
    return os.environ.get(ENV_API, DEFAULT_API).rstrip("/")


def make_bot(token: str, *, timeout: float = TIMEOUT) -> Bot:
    base = api_base()
    return Bot(
        token,
        base_url=f"{base}/bot",
        base_file_url=f"{base}/file/bot",
        request=HTTPXRequest(connection_pool_size=_CONNECTIONS, read_timeout=timeout, pool_timeout=30.0),
        get_updates_request=HTTPXRequest(connection_pool_size=2, read_timeout=timeout),
    )


def seconds(value: int | float | timedelta) -> float:
    """retry_after, whichever way the library gives it."""
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def not_modified(exc: BadRequest) -> bool:
    """Telegram's answer to an edit that changes nothing: the text is already there."""
    return "message is not modified" in exc.message.lower()


@contextmanager
def translated() -> Iterator[None]:
    """Flood control and network errors as Link's bridge retries them; an edit already made as done."""
    try:
        yield
    except RetryAfter as exc:
        raise RetryLater(seconds(exc.retry_after)) from exc
    except BadRequest as exc:
        if not not_modified(exc):
            raise
    except NetworkError as exc:
        raise Interrupted(str(exc)) from exc
