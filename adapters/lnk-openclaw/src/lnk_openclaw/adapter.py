"""The adapter: what lnk-openclaw answers to every harness command of the contract.

OpenClaw's home is the harness's home Link gives it (`folders.harness_home`, its HOME in the
sandbox): the release it runs (`openclaw-release`, a link to the shared store's or its own), its own
state (`openclaw/`: config, sessions, workspace, log) and Link's marks.
"""

from __future__ import annotations

from pathlib import Path

from link_plugin.fronted import FrontedAdapter
from link_plugin.harness import HarnessSettings, Needs, Risk
from link_plugin.plugin import HarnessContext
from lnk_openclaw import __version__, config, release


class OpenClaw(FrontedAdapter):
    name = "openclaw"
    release = __version__
    default_port = 18789  # OpenClaw's own gateway port: the agent `main` keeps it for its endpoint
    install_hosts = ["registry.npmjs.org"]  # install reaches npm's registry
    state_path = config.STATE
    front_module = "lnk_openclaw.front"
    upstream = "OpenClaw's gateway"
    health_path = "/healthz"

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

    def install_release(self, home: Path | None) -> str:
        return release.install(home)

    def configure_home(self, home: Path, settings: HarnessSettings, first: int) -> str:
        return config.configure(home, settings, first)
