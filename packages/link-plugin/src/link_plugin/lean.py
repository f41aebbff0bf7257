"""Starting lean: what a Link program leaves unimported because it never uses it.

A program of Link's that talks HTTP imports httpx, and httpx imports its own command-line client
whenever that client's libraries (click, rich, pygments) are installed, as they are beside lnk:
about 6 MiB resident and 50 ms at every start, for a tool no Link program runs. Called before
httpx is first imported, `skip_httpx_cli` leaves it out; httpx then offers in its place a `main`
that says its command line isn't available here.
"""

from __future__ import annotations

import sys


def skip_httpx_cli() -> None:
    if "httpx._main" not in sys.modules:
        # None in sys.modules halts that import (ModuleNotFoundError), which httpx expects and catches.
        sys.modules["httpx._main"] = None  # type: ignore[assignment]
