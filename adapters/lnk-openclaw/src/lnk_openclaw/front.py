"""`python -m lnk_openclaw.front`: what `start` runs, OpenClaw behind Link's wire.

OpenClaw's gateway serves OpenAI chat completions (once configured to), but not Link's wire, so
the harness is two processes in one sandbox (`link_plugin.front`): OpenClaw (`openclaw gateway
run`), its gateway on the loopback at `LNK_PORT` + 1 with a token made here at each start that
nothing else holds, and link-plugin's front at `LNK_PORT`, which answers the proof, checks the
key and the agent, and carries each conversation as one OpenClaw session
(`x-openclaw-session-key`), whose history OpenClaw keeps in its own state.

Before OpenClaw starts, the front makes sure it is installed (from the shared store: a link) and
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
from lnk_openclaw import config, release

log = logging.getLogger("lnk-openclaw")


def openclaw_env(home: Path, token: str) -> dict[str, str]:
    """OpenClaw's environment: link-plugin's for a harness behind a front, its own state folder
    and config, and the token made at this start, its gateway's and the front's model relay's
    (never the model's key: the proxy adds it, or the front where the agent's keys aren't wired)."""
    env = front.harness_env(
        home,
        OPENCLAW_STATE_DIR=str(config.state(home)),
        OPENCLAW_CONFIG_PATH=str(config.config_file(home)),
        OPENCLAW_GATEWAY_TOKEN=token,
        **{config.RELAY_KEY: token},
        OPENCLAW_DISABLE_BONJOUR="1",
    )
    return env


def run(settings: HarnessSettings, first: int) -> int:
    logging.basicConfig(level=logging.INFO, format="lnk-openclaw: %(message)s")
    home = Path(settings.folders.harness_home)
    try:
        if not release.RELEASE.installed(home):
            log.info("%s", release.install(home))
        log.info("%s", config.configure(home, settings, first))
    except LinkError as exc:
        print(f"lnk-openclaw: {exc}", file=sys.stderr)
        return 1
    token = secrets.token_hex(32)
    process = front.spawn(
        release.openclaw(home, "gateway", "run"), env=openclaw_env(home, token), cwd=settings.folders.home
    )
    upstream = front.Upstream(
        name="OpenClaw",
        url=f"http://127.0.0.1:{upstream_port(first)}",
        key=token,
        model="openclaw/default",
        session_header="x-openclaw-session-key",
        health="/healthz",
    )
    return front.serve(settings, first, upstream, process)


if __name__ == "__main__":
    sys.exit(run(*front.given()))
