"""`lnk-slack connect`: show Link's app manifest, take the app's two tokens, check them, and pair
the owner by a one-time code.

Each agent has a Slack app of its own, made from Link's manifest (`manifest`): Socket Mode on,
the app's direct messages and its mentions as events, and only the scopes the bridge uses
(`SCOPES`). The bot token (`xoxb-`) is checked with `auth.test`, the app-level token (`xapp-`)
with `apps.connections.open`; then the Socket Mode connection opens, and Slack's `hello` names
the app (`connection_info.app_id`) and how many connections it has. An app another agent here has
is refused, and so is one another program is connected to: Slack shares an app's events among
its connections, so each would miss some. Only once the connection is open is the code printed,
so a code sent at once can't go unseen; whoever sends it to the app in a direct message becomes
the owner, and the terminal says so.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from link_plugin.bridge.pairing import EXPIRES, Pairing, PairingCode
from link_plugin.bridge.tokens import read_tokens
from link_plugin.channel import Connected
from link_plugin.errors import LinkError
from link_plugin.plugin import say
from link_plugin.waits import within
from lnk_slack.api import error, socket_client, web_client
from lnk_slack.messages import escape, read
from lnk_slack.section import APP_SECRET, APP_TOKEN, BOT_SECRET, BOT_TOKEN, Section, identity

SCOPES = ["app_mentions:read", "chat:write", "im:history", "reactions:write"]
"""The bot's scopes, and what each is for: its mentions in a channel, posting and editing answers,
reading the owner's direct messages, 👀 while answering (and the steered mark)."""
EVENTS = ["app_mention", "message.im"]
HELLO = 15.0
"""Seconds to wait for Slack's `hello` once connected."""
LISTEN = 10.0
"""Seconds between looks at the clock while waiting for the code."""


def manifest(agent: str | None) -> dict[str, Any]:
    """Link's app manifest: Socket Mode on, the owner's direct messages and the app's mentions, no more."""
    name = f"Link {agent}"[:35] if agent else "Link"
    return {
        "display_information": {"name": name, "description": "A personal agent, answering its owner only."},
        "features": {
            "app_home": {
                "home_tab_enabled": False,
                "messages_tab_enabled": True,
                "messages_tab_read_only_enabled": False,
            },
            "bot_user": {"display_name": name, "always_online": True},
        },
        "oauth_config": {"scopes": {"bot": SCOPES}},
        "settings": {
            "event_subscriptions": {"bot_events": EVENTS},
            "interactivity": {"is_enabled": True},
            "org_deploy_enabled": False,
            "socket_mode_enabled": True,
            "token_rotation_enabled": False,
        },
    }


def how_to_make(agent: str | None) -> str:
    """What the terminal shows before it asks for the tokens."""
    return (
        "Each agent answers through a Slack app of its own, made from Link's manifest:\n"
        "  1. Open https://api.slack.com/apps, choose Create New App, From a manifest, pick your\n"
        "     workspace, and paste this manifest (JSON):\n\n"
        f"{json.dumps(manifest(agent), indent=2)}\n\n"
        "  2. Install to Workspace, and allow it. Copy OAuth & Permissions, Bot User OAuth Token (xoxb-...).\n"
        "  3. In Basic Information, App-Level Tokens, Generate Token and Scopes with the scope\n"
        "     connections:write. Copy it (xapp-...).\n"
    )


async def connect(
    app_token: str,
    bot_token: str,
    taken: frozenset[str],
    *,
    expires: float = EXPIRES,
    clock: Callable[[], float] = time.monotonic,
) -> Connected:
    web = web_client(bot_token)
    me = await _check(web, app_token)
    socket = socket_client(app_token, web)
    hello: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    heard: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    listening = False

    async def on_message(client: AsyncBaseSocketModeClient, message: dict[str, Any], raw: str | None) -> None:
        if message.get("type") == "hello" and not hello.done():
            hello.set_result(message)

    async def on_request(client: AsyncBaseSocketModeClient, request: SocketModeRequest) -> None:
        await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))
        if listening and request.type == "events_api":
            heard.put_nowait(request.payload.get("event") or {})

    socket.message_listeners.append(on_message)
    socket.socket_mode_request_listeners.append(on_request)
    try:
        await socket.connect()  # type: ignore[no-untyped-call]  # slack-sdk's, untyped
        try:
            said = await within(hello, HELLO)
        except TimeoutError:
            raise LinkError(
                "Slack's Socket Mode connection opened but said nothing", "Check the network, then connect again."
            ) from None
        app_id = str((said.get("connection_info") or {}).get("app_id", ""))
        _refuse_shared(app_id, int(said.get("num_connections", 1)), taken)
        code = PairingCode(expires=expires, clock=clock)
        pairing = Pairing(code, "slack")
        listening = True  # what came before the code pairs nobody
        say(
            f"To pair, send this code to the app in a direct message on Slack: {code.shown}\n"
            f"It works once, for {expires / 60:g} minutes."
        )
        while not code.expired:
            try:
                event = await within(heard.get(), min(LISTEN, max(0.1, code.remaining)))
            except TimeoutError:
                continue
            message = read(event, str(me["user_id"]))
            if message is None or not message.incoming.direct or message.edited or not message.text:
                continue
            sender = message.incoming.sender
            if await pairing.take(sender, message.text, partial(_reply, web, message.chat)):
                say(f"Paired: the app answers Slack member {sender} in {me['team']}, and nobody else.")
                section = Section(
                    owner=sender,
                    dm=message.chat,
                    team=str(me["team"]),
                    team_id=str(me["team_id"]),
                    app_id=app_id,
                    bot_user=str(me["user_id"]),
                )
                secrets = {APP_SECRET: app_token, BOT_SECRET: bot_token}
                return Connected(identity=identity(app_id), section=section.model_dump(), secrets=secrets)
        raise pairing.expired("the app", expires)
    finally:
        await socket.close()  # type: ignore[no-untyped-call]


async def _check(web: AsyncWebClient, app_token: str) -> dict[str, Any]:
    """Both tokens checked with Slack: the bot's with `auth.test`, the app's with `apps.connections.open`."""
    try:
        me = await web.auth_test()
        if not me.get("bot_id"):
            raise LinkError(
                "Slack says the bot token isn't a bot's",
                "Copy the Bot User OAuth Token (xoxb-...) from the app's OAuth & Permissions.",
            )
        try:
            await web.apps_connections_open(app_token=app_token)
        except SlackApiError as exc:
            raise LinkError(
                f"Slack refused the app-level token ({error(exc)})",
                "Generate an app-level token with the scope connections:write (Basic Information, App-Level "
                "Tokens), and check Socket Mode is on (it is in Link's manifest).",
            ) from None
    except SlackApiError as exc:
        raise LinkError(
            f"Slack refused the bot token ({error(exc)}): it was revoked, or mistyped",
            "Copy it again from the app's OAuth & Permissions (Bot User OAuth Token), then connect again.",
        ) from None
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise LinkError(
            f"Slack can't be reached ({type(exc).__name__})", "Check the network, then connect again."
        ) from None
    return dict(me.data) if isinstance(me.data, dict) else {}


def _refuse_shared(app_id: str, connections: int, taken: frozenset[str]) -> None:
    if identity(app_id) in taken:
        raise LinkError(
            f"another agent here has the Slack app {app_id}: Slack shares an app's messages among its connections",
            "Make an app for this agent from Link's manifest, or disconnect it from the other agent first.",
        )
    if connections > 1:
        raise LinkError(
            f"another program is connected to the Slack app {app_id} ({connections - 1} other connections)",
            "Slack shares an app's messages among its connections, so each would miss some. Stop the other "
            "program, or make an app for this agent from Link's manifest.",
        )


async def _reply(web: AsyncWebClient, channel: str, text: str) -> None:
    """Tell the sender how it went; a reply lost to the network doesn't stop pairing."""
    try:
        await web.chat_postMessage(channel=channel, text=escape(text))
    except (TimeoutError, SlackApiError, aiohttp.ClientError) as exc:
        say(f"(couldn't answer on Slack: {type(exc).__name__})")


def run(token_stdin: bool, taken: frozenset[str], agent: str | None = None) -> Connected:
    say(how_to_make(agent))
    tokens = read_tokens([APP_TOKEN, BOT_TOKEN], token_stdin)
    return asyncio.run(connect(tokens[APP_SECRET], tokens[BOT_SECRET], taken))
