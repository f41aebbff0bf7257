"""The adapter: what lnk-openclaw answers to every harness command of the contract.

OpenClaw's home is the harness's home Link gives it (`folders.harness_home`, its HOME in the
sandbox): the release it runs (`openclaw-release`, a link to the shared store's or its own), its own
state (`openclaw/`: config, sessions, workspace, log) and Link's marks.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx

from link_plugin.errors import LinkError
from link_plugin.harness import (
    Channels,
    Done,
    Endpoint,
    Folders,
    Health,
    Hosts,
    Needs,
    Ports,
    Risk,
    Start,
    State,
)
from link_plugin.plugin import HarnessAdapter, HarnessContext
from lnk_openclaw import __version__, config, release

DEFAULT_PORT = 18789
"""OpenClaw's own gateway port: the agent `main` keeps it for its endpoint."""
PORT_COUNT = 2
"""The endpoint (the front) and, after it, OpenClaw's gateway."""
REGISTRY_HOSTS = ["registry.npmjs.org"]


def _home(ctx: HarnessContext) -> Path | None:
    """The harness's home the settings name; None when run by hand, without them."""
    settings = ctx.settings
    return Path(settings.folders.harness_home) if settings is not None else None


class OpenClaw(HarnessAdapter):
    name = "openclaw"
    release = __version__

    def needs(self, ctx: HarnessContext) -> Needs:
        # Its tools (a shell, files) run inside the sandbox with the agent's grants; its model and
        # MCP servers are reached through the proxy. What it opens beyond that is said here.
        return Needs(
            risks=[
                Risk(
                    name="gateway port",
                    why=(
                        "OpenClaw's gateway listens on the loopback at the port after the endpoint's; it takes "
                        "a token made at each start, which grants full operator access to OpenClaw"
                    ),
                ),
                Risk(
                    name="managed browser",
                    why=(
                        "OpenClaw can run Chrome for its browser tool, whose control port and DevTools ports "
                        "on the loopback take no credential"
                    ),
                    optional=True,
                    without="configure turns it off: OpenClaw's browser tool is unavailable",
                ),
            ]
        )

    def channels(self, ctx: HarnessContext) -> Channels:
        return Channels(channels=[])  # its own channels stay off: Link's bridges carry every channel

    def ports(self, ctx: HarnessContext) -> Ports:
        return Ports(count=PORT_COUNT, default=DEFAULT_PORT)

    def folders(self, ctx: HarnessContext) -> Folders:
        return Folders(writes=["Home"])  # its file and shell tools work in the agent's files

    def endpoint(self, ctx: HarnessContext) -> Endpoint:
        return Endpoint(url=f"http://127.0.0.1:{ctx.port or DEFAULT_PORT}/v1", proof=True, agent=True)

    def hosts(self, ctx: HarnessContext) -> Hosts:
        return Hosts(hosts=REGISTRY_HOSTS)  # install reaches npm's registry; configure reaches nothing

    def state(self, ctx: HarnessContext) -> State:
        return State(paths=[config.STATE])

    def install(self, ctx: HarnessContext) -> Done:
        return Done(detail=release.install(_home(ctx)))

    def configure(self, ctx: HarnessContext) -> Done:
        settings = ctx.settings
        if settings is None:
            raise LinkError("configure reads the agent's settings: LNK_SETTINGS names none.")
        home = Path(settings.folders.harness_home)
        return Done(detail=config.configure(home, settings, ctx.port or DEFAULT_PORT))

    def start(self, ctx: HarnessContext) -> Start:
        return Start(argv=[sys.executable, "-m", "lnk_openclaw.front"])

    def health(self, ctx: HarnessContext) -> Health:
        port = config.gateway_port(ctx.port or DEFAULT_PORT)
        try:
            response = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=3, trust_env=False)
        except httpx.HTTPError as exc:
            return Health(ok=False, detail=f"OpenClaw doesn't answer on port {port}: {exc}")
        status = response.status_code
        return Health(ok=status == 200, detail=f"OpenClaw's gateway on port {port}: {status}")
