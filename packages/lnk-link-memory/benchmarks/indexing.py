"""A folder indexed by words alone, once: each benchmark's unit of indexing work.

Kept apart from the benchmarks' own imports (an MCP client, the model), so a process started to
run it pays for what Link Memory imports and no more.
"""

from __future__ import annotations

from pathlib import Path

from lnk_link_memory.folder import Folder
from lnk_link_memory.memory import Config, Memory
from lnk_link_memory.models import choose


def index_here(folder: Path, state: Path) -> None:
    memory = Memory(Config(Folder.plain(folder, None), state, None, 0, choose("none", None), str(folder)))
    memory.store.open()
    memory.indexer.scan()
    memory.store.close()
