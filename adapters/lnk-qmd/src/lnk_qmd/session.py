"""One agent's session: QMD's MCP server over the agent's folder, its index in the engine's state.

QMD keeps collections (folders with a glob) in its config and an index it updates when told.
A session names two collections, `memory` (Home/memory, every markdown file at any depth) and
`chats` (each conversation's conversation.md), brings the index up to date, then runs `qmd mcp`
on this process's stdin and stdout. While it runs, the index is brought up to date again every
`UPDATE_SECONDS`, so a note written mid-conversation is found within that. Everything QMD writes
(its index, config and cache) is in the state folder: nothing in the agent's folder, nothing in
the home folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from link_plugin import node
from link_plugin.layout import AgentFolder
from lnk_qmd import runtime

UPDATE_SECONDS = 30.0
_COLLECTIONS = "collections.json"
"""What this state's collections were made over: made again when the folder moved."""


def environment(state: Path) -> dict[str, str]:
    """QMD's environment: every place it writes inside `state`; no model is ever fetched."""
    return {
        "PATH": f"{node.bin_folder()}{os.pathsep}/usr/bin:/bin",
        "HOME": str(state),
        "INDEX_PATH": str(state / "index.sqlite"),
        "QMD_CONFIG_DIR": str(state / "config"),
        "XDG_CONFIG_HOME": str(state / "config"),
        "XDG_CACHE_HOME": str(state / "cache"),
        "NO_COLOR": "1",
        "LANG": "C.UTF-8",
    }


def collections(folder: Path) -> dict[str, tuple[str, str]]:
    """name -> (folder, glob) of what an agent's memory holds."""
    agent = AgentFolder(folder)
    return {"memory": (str(agent.memory), "**/*.md"), "chats": (str(agent.chats), "*/conversation.md")}


def _run(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        runtime.qmd(*args),
        env=environment(state),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def prepare(folder: Path, state: Path) -> None:
    """The collections named over this folder, and the index brought up to date."""
    state.mkdir(parents=True, exist_ok=True)
    wanted = collections(folder)
    record = state / _COLLECTIONS
    try:
        made = json.loads(record.read_text())
    except (OSError, ValueError):
        made = None
    if made != {name: list(where) for name, where in wanted.items()}:
        for name, (path, glob) in wanted.items():
            _run(state, "collection", "remove", name)
            Path(path).mkdir(parents=True, exist_ok=True)
            added = _run(state, "collection", "add", path, "--name", name, "--mask", glob)
            if added.returncode != 0:
                raise SystemExit(f"lnk-qmd: QMD couldn't add {path}: {(added.stderr or added.stdout).strip()[-400:]}")
        record.write_text(json.dumps({name: list(where) for name, where in wanted.items()}))
    update(state)


def update(state: Path) -> None:
    done = _run(state, "update")
    if done.returncode != 0:
        print(f"lnk-qmd: qmd update failed: {(done.stderr or done.stdout).strip()[-400:]}", file=sys.stderr)


def run(folder: Path, state: Path) -> int:
    if not runtime.installed():
        raise SystemExit("lnk-qmd: QMD isn't installed: run `lnk-qmd install` (Link runs it before first use).")
    if not folder.is_dir():
        raise SystemExit(f"lnk-qmd: the agent folder {folder} isn't there; Link names an agent's own.")
    prepare(folder, state)
    server = subprocess.Popen(runtime.qmd("mcp"), env=environment(state))
    stop = threading.Event()

    def keep_up() -> None:
        while not stop.wait(UPDATE_SECONDS):
            update(state)

    threading.Thread(target=keep_up, name="update", daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: server.terminate())
    try:
        return server.wait()
    finally:
        stop.set()
