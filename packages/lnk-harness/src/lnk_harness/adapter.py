"""The adapter: what Link Harness answers to every harness command of the contract.

It answers neither `install` nor `configure`: it runs from its own wheel and reads the agent's
settings at each start, so Link runs neither (its `describe` doesn't name them).
"""

from __future__ import annotations

import sys

from link_plugin.harness import Channels, Endpoint, Folders, Health, Hosts, Needs, Ports, Start, State
from link_plugin.headers import AGENT, AGENT_ID
from link_plugin.plugin import HarnessAdapter, HarnessContext
from lnk_harness import __version__
from lnk_harness.addresses import DEFAULT_PORT, HEALTH_PATH, HOST, PORT_COUNT, base_url


class LinkHarness(HarnessAdapter):
    name = "harness"
    release = __version__

    def needs(self, ctx: HarnessContext) -> Needs:
        return Needs()  # nothing beyond Link's defaults: it runs no code and reaches only its proxy

    def channels(self, ctx: HarnessContext) -> Channels:
        return Channels(channels=[])  # none of its own: its endpoint speaks every channel Link carries

    def ports(self, ctx: HarnessContext) -> Ports:
        return Ports(count=PORT_COUNT, default=DEFAULT_PORT)

    def folders(self, ctx: HarnessContext) -> Folders:
        return Folders(writes=["chats"])

    def endpoint(self, ctx: HarnessContext) -> Endpoint:
        return Endpoint(url=base_url(ctx.port or DEFAULT_PORT), proof=True, agent=True, tools=True, once=True)

    def hosts(self, ctx: HarnessContext) -> Hosts:
        return Hosts()  # it installs nothing from third parties

    def state(self, ctx: HarnessContext) -> State:
        return State(paths=[])  # it keeps nothing in its home: conversations live in the agent's chats/

    def start(self, ctx: HarnessContext) -> Start:
        # The same for every agent, so `describe` carries it: the endpoint reads and checks the
        # agent's settings itself, and refuses to run without a model or a key.
        return Start(argv=[sys.executable, "-m", "lnk_harness.serve"])

    def health(self, ctx: HarnessContext) -> Health:
        import httpx  # only health calls out: every other answer starts without it

        port = ctx.port or DEFAULT_PORT
        settings = ctx.settings
        headers = {AGENT: settings.agent.name, AGENT_ID: settings.agent.id} if settings else {}
        try:
            response = httpx.get(f"http://{HOST}:{port}{HEALTH_PATH}", headers=headers, timeout=3, trust_env=False)
        except httpx.HTTPError as exc:
            return Health(ok=False, detail=f"nothing answers on port {port}: {exc}")
        if response.status_code != 200:
            return Health(ok=False, detail=f"port {port} answers {response.status_code}: {response.text[:200]}")
        return Health(ok=True, detail=f"answering on port {port}")
