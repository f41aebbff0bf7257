"""`python -m lnk_harness.serve`: the endpoint as Link runs it, the command `start` answers.

It answers for the agent `$LNK_SETTINGS` names, on `$LNK_PORT`, and imports only what answering
takes (no command-line parser, no HTTP client's own command line): the harness is listening
sooner and holds less. `lnk-harness serve` runs the same endpoint, with options for more agents.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from link_plugin import LinkError
from link_plugin.harness import ENV_PORT, ENV_SETTINGS
from link_plugin.lean import skip_httpx_cli
from lnk_harness.addresses import DEFAULT_PORT, HOST


def serve(paths: list[Path], own: Path | None, port: int | None) -> int:
    """Answer for the agents of `paths` (`own`'s tools taken from the environment) until told to stop."""
    skip_httpx_cli()
    import uvicorn

    from lnk_harness import agents, model, server

    logging.basicConfig(level=logging.INFO, format="lnk-harness: %(message)s")
    for client in ("httpx", "httpx2"):
        # Their line per request (the model's, each tool's) is written before the first token, every
        # step; a request that fails is said by the harness itself, with what it was for.
        logging.getLogger(client).setLevel(logging.WARNING)
    if not paths:
        print(f"lnk-harness serve: no agent: set {ENV_SETTINGS} or pass --settings FILE.", file=sys.stderr)
        return 2
    http = model.new_http()
    try:
        loaded = agents.load(paths, own, os.environ, http)
    except LinkError as exc:
        print(f"lnk-harness serve: {exc}", file=sys.stderr)
        return 1
    listen = port or int(os.environ.get(ENV_PORT) or 0) or (loaded[0].settings.ports or [DEFAULT_PORT])[0]
    config = uvicorn.Config(
        server.Harness(loaded, http).app(),
        host=HOST,
        port=listen,
        log_level="warning",
        timeout_graceful_shutdown=5,
        ws="none",  # HTTP only: uvicorn would load its websocket protocols for nothing
    )
    uvicorn.Server(config).run()
    return 0


def own_settings() -> Path | None:
    return Path(os.environ[ENV_SETTINGS]) if os.environ.get(ENV_SETTINGS) else None


if __name__ == "__main__":
    own = own_settings()
    sys.exit(serve([own] if own is not None else [], own, None))
