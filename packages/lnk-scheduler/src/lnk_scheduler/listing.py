"""What `serve` lists (its MCP `tools/list` result), shipped beside the code as `tools.json`.

The tools don't depend on the agent, its settings or its environment, only on this release, so a
harness asking what the tool offers needs no server: `lnk-scheduler tools` prints this file
(without importing the MCP SDK or typer), and Link answers a first listing from it.

After changing a tool (its name, description, arguments, answer or hints), write the file anew:

    python -m lnk_scheduler.listing

tests/test_listing.py starts the real server and fails while the file differs from what it lists.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_types import ListToolsResult

LISTING = Path(__file__).with_name("tools.json")


def shipped() -> str:
    """The listing as shipped: what `lnk-scheduler tools` prints."""
    return LISTING.read_text()


def written(listed: ListToolsResult) -> str:
    """A server's listing as the file holds it: the result as it goes over the wire, indented."""
    wire: dict[str, Any] = listed.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json.dumps(wire, indent=2, ensure_ascii=False) + "\n"


async def served() -> ListToolsResult:
    """What the server lists, asked of it in process (its tools need a state folder: a throwaway)."""
    import tempfile

    from mcp import Client

    from lnk_scheduler.server import build
    from lnk_scheduler.store import Store
    from lnk_scheduler.tool import Scheduler, Settings

    with tempfile.TemporaryDirectory() as state:
        async with Client(build(Scheduler(Store(Path(state)), Settings.from_env({})))) as client:
            return await client.list_tools()


def main() -> None:
    import anyio

    LISTING.write_text(written(anyio.run(served)))
    print(f"wrote {LISTING}", file=sys.stderr)


if __name__ == "__main__":
    main()
