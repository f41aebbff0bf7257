"""Discord's REST API and Gateway through discord.py: the client, where it points, and Discord's
errors in Link's terms.

`LNK_DISCORD_API` points discord.py elsewhere than Discord (the tests' fake): the origin of a
Discord-compatible server, its REST API under `/api/v10`. discord.py has no setting per client
for where Discord is, only its own class-level defaults, which this one setting replaces: the REST
API's base (`discord.http.Route.BASE`, which discord.py itself sets for its API version) and the
Gateway it connects to first (`DiscordWebSocket.DEFAULT_GATEWAY`), asked of that API's `GET
/gateway/bot` as Discord says a bot should. After READY the Gateway names where to resume. Without
the setting nothing is changed.

The client has only the intents the bridge needs: direct messages, and a server's messages for
the owner's mention (whose text Discord gives a bot without the message content intent).
discord.py's own rate limiter waits out a 429 (`Retry-After`) and tries the call again, so a
flood never sends anything twice; past its patience it raises `RateLimited`, retried by the
bridge after the wait Discord asked for.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import aiohttp
import discord
import yarl
from discord.gateway import DiscordWebSocket

from link_plugin.bridge.retry import Interrupted, RetryLater

ENV_API = "LNK_DISCORD_API"
LIMIT = 2000
"""Discord's longest message."""
PATIENCE = 60.0
"""Seconds of one 429 discord.py waits out itself; a longer one is the bridge's to wait."""


def intents() -> discord.Intents:
    """Direct messages, and a server's messages for the owner's mention; nothing else."""
    chosen = discord.Intents.none()
    chosen.dm_messages = True
    chosen.guild_messages = True
    return chosen


class Gateway(discord.Client):
    """discord.py's client as Link's bridge and `connect` use it: the intents above, discord.py's
    patience with a 429, where Discord is. Its `on_*` methods are what it does with Discord's events."""

    def __init__(self) -> None:
        where()
        # No servers to wait for (no guilds intent): ready as soon as the Gateway says READY.
        super().__init__(intents=intents(), max_ratelimit_timeout=PATIENCE, guild_ready_timeout=0.1)


def where() -> None:
    """Point discord.py's REST API at `LNK_DISCORD_API`, when it is set."""
    origin = os.environ.get(ENV_API)
    if origin:
        discord.http.Route.BASE = f"{origin.rstrip('/')}/api/v{discord.http.INTERNAL_API_VERSION}"


async def find_gateway(client: discord.Client) -> None:
    """With `LNK_DISCORD_API` set, the Gateway is the one its REST API names."""
    if os.environ.get(ENV_API):
        _, url, _ = await client.http.get_bot_gateway()
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)


@contextmanager
def translated() -> Iterator[None]:
    """Flood control past discord.py's patience and network errors as Link's bridge retries them."""
    try:
        yield
    except discord.RateLimited as exc:
        raise RetryLater(exc.retry_after) from exc
    except discord.DiscordServerError as exc:
        raise Interrupted(f"Discord answered {exc.status}") from exc
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        raise Interrupted(f"{type(exc).__name__}: {exc}") from exc
