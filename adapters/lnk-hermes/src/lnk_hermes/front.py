"""`python -m lnk_hermes.front`: what `start` runs, Hermes Agent behind Link's wire.

Hermes's API server speaks OpenAI chat completions, but not Link's wire, so the harness is two
processes in one sandbox (`link_plugin.front`): Hermes (`hermes gateway run`), its API server on
the loopback at `LNK_PORT` + 1 with a key made here at each start that nothing else holds, and
link-plugin's front at `LNK_PORT`, which answers the proof, checks the key and the agent, and
carries each conversation as one Hermes session (`X-Hermes-Session-Id`), whose history Hermes
keeps in its own state.

Before Hermes starts, the front makes sure it is installed (from the shared store: a link) and
configured (nothing when the settings didn't change), so a start needs nothing else run first.
"""

from __future__ import annotations

import logging
import secrets
import sys
from pathlib import Path

from link_plugin import front
from link_plugin.errors import LinkError
from link_plugin.fronted import upstream_port
from link_plugin.harness import HarnessSettings
from lnk_hermes import config, release

log = logging.getLogger("lnk-hermes")


def hermes_env(home: Path, settings: HarnessSettings, key: str) -> dict[str, str]:
    """Hermes's environment: link-plugin's for a harness behind a front, its own home, its API
    server's key, and the model's key only where the owner turned the agent's wired keys off
    (else the proxy adds it)."""
    env = front.harness_env(home, HERMES_HOME=str(config.hermes_home(home)), API_SERVER_KEY=key)
    if settings.model is not None and settings.model.key:
        env["OPENAI_API_KEY"] = settings.model.key
    return env


def run(settings: HarnessSettings, first: int) -> int:
    logging.basicConfig(level=logging.INFO, format="lnk-hermes: %(message)s")
    home = Path(settings.folders.harness_home)
    try:
        if not release.installed(home):
            log.info("%s", release.install(home))
        log.info("%s", config.configure(home, settings, first))
    except LinkError as exc:
        print(f"lnk-hermes: {exc}", file=sys.stderr)
        return 1
    key = secrets.token_hex(32)
    process = front.spawn(
        [*release.hermes(home), "gateway", "run"], env=hermes_env(home, settings, key), cwd=settings.folders.home
    )
    upstream = front.Upstream(
        name="Hermes",
        url=f"http://127.0.0.1:{upstream_port(first)}",
        key=key,
        model="hermes-agent",
        session_header="X-Hermes-Session-Id",
    )
    return front.serve(settings, first, upstream, process)


if __name__ == "__main__":
    sys.exit(run(*front.given()))
