"""Scan a plain folder once and print what memory holds, as JSON: run where a test can't be itself
(inside a mount namespace of its own, or without the capabilities that let root read any file).

    python scan_child.py FOLDER STATE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lnk_link_memory.folder import Folder
from lnk_link_memory.memory import Config, Memory
from lnk_link_memory.models import choose


def main(folder: Path, state: Path) -> None:
    memory = Memory(Config(Folder.plain(folder, None), state, None, 0, choose("none", None), str(folder)))
    memory.store.open()
    memory.scan()
    status = memory.status()
    print(
        json.dumps(
            {
                "paths": sorted(entry.path for entry in memory.changes().entries),
                "skipped": {s.path: s.why for s in status.skipped},
                "last_scan": status.last_scan,
            }
        )
    )
    memory.store.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
