"""OpenClaw as this release pins it, installed once and shared read-only.

The pin is `npm/package.json` and the `npm/package-lock.json` made from it beside this module:
`openclaw` at one version and every package it runs on, each with the integrity (SHA-512) npm
checks it against. `npm ci`, run by link-plugin's pinned Node (`link_plugin.node`, whose binary is
checked first), installs exactly that tree with no install script run; then OpenClaw's own
(`postinstall`), and no other package's, completes its package in place, which OpenClaw requires
before it starts. The native modules it loads (`@lydell/node-pty`, `koffi`) ship their builds in
the packages. About 650 MB in 330 packages.

A built release is the npm tree, `openclaw-<version>/`, in link-plugin's store
(`link_plugin.store`): `share/lnk-openclaw/` in the environment lnk-openclaw is installed in, or
`LNK_OPENCLAW_STORE`, which every sandbox reads and none writes; every agent's home links to it
(`openclaw-release`), or holds its own when the store can't be written from where it installs.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import subprocess
from pathlib import Path

from link_plugin import node
from link_plugin.errors import LinkError
from link_plugin.store import Release

OPENCLAW_VERSION = "2026.9.6"
LINK = "openclaw-release"
"""The name, in a home, of the release it runs: a link to the store's, or the release itself."""
ENTRY = "node_modules/openclaw/openclaw.mjs"
LIFECYCLE = "scripts/postinstall-bundled-plugins.mjs"
LIFECYCLE_PENDING = ".openclaw-lifecycle-pending"
"""OpenClaw's mark that its install script hasn't run: it refuses to start while it is there."""


def _shipped() -> importlib.resources.abc.Traversable:
    return importlib.resources.files("lnk_openclaw").joinpath("npm")


def pin() -> str:
    """The digest of the pin itself (the lockfile): a release built from another is another release."""
    return hashlib.sha256(_shipped().joinpath("package-lock.json").read_bytes()).hexdigest()


def _build(building: Path) -> None:
    node.npm_ci(building, _shipped(), what=f"OpenClaw {OPENCLAW_VERSION}")
    package = building / "node_modules" / "openclaw"
    version = json.loads((package / "package.json").read_text()).get("version")
    if version != OPENCLAW_VERSION:
        raise LinkError(f"npm installed OpenClaw {version}, not {OPENCLAW_VERSION}.", "Install lnk-openclaw again.")
    # OpenClaw's own install script, and no other package's: it completes OpenClaw's package in
    # place (touching nothing outside it), and OpenClaw refuses to start until it has run, trying
    # to run it itself at start, where the release is read-only.
    done = subprocess.run(
        node.command(package / LIFECYCLE), cwd=package, capture_output=True, text=True, timeout=300, check=False
    )
    if done.returncode != 0 or (package / LIFECYCLE_PENDING).exists():
        raise LinkError(
            f"OpenClaw {OPENCLAW_VERSION}'s install script failed: {(done.stderr or done.stdout).strip()[-800:]}",
            "Install lnk-openclaw again.",
        )


RELEASE = Release(
    adapter="lnk-openclaw",
    folder=f"openclaw-{OPENCLAW_VERSION}",
    link=LINK,
    what=f"OpenClaw {OPENCLAW_VERSION} on Node {node.VERSION}",
    pin=pin(),
    build=_build,
    runs=ENTRY,
)


def openclaw(home: Path, *args: str) -> list[str]:
    """The command running OpenClaw on the pinned Node."""
    return node.command(RELEASE.in_home(home) / ENTRY, *args)


def install(home: Path | None) -> str:
    """OpenClaw for the home (the store's, built there first if it can be), or with no home (run
    by hand, outside Link) the store's alone. What was done, in words."""
    node.check()
    return RELEASE.install(home)
