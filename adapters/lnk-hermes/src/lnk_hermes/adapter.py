"""The adapter: what lnk-hermes answers to every harness command of the contract.

Hermes's home is the harness's home Link gives it (`folders.harness_home`, its HOME in the
sandbox): the release it runs (`hermes-agent`, a link to the shared store's or its own), its own
state (`hermes/`: config, sessions, memory) and Link's marks.
"""

from __future__ import annotations

from pathlib import Path

from link_plugin.fronted import FrontedAdapter
from link_plugin.harness import HarnessSettings, Needs
from link_plugin.plugin import HarnessContext
from lnk_hermes import __version__, config, release


class Hermes(FrontedAdapter):
    name = "hermes"
    release = __version__
    default_port = 8642  # Hermes's own API server port: the agent `main` keeps it for its endpoint
    install_hosts = ["pypi.org", "files.pythonhosted.org"]  # install reaches PyPI
    state_path = config.STATE
    front_module = "lnk_hermes.front"
    upstream = "Hermes's API server"

    def needs(self, ctx: HarnessContext) -> Needs:
        # Its tools (a terminal, files) run inside the sandbox with the agent's grants; its model
        # and its MCP servers are reached through the proxy. Nothing beyond Link's defaults.
        return Needs()

    def install_release(self, home: Path | None) -> str:
        return release.install(home)

    def configure_home(self, home: Path, settings: HarnessSettings, first: int) -> str:
        return config.configure(home, settings, first)
