"""Installing Link's plugins on first use, from the signed release index, into lnk's own environment.

    from lnk.install import PLUGINS, ensure_plugin
    program = ensure_plugin("lnk-telegram")   # the path of the executable, installed if it wasn't

Every wheel is checked (the manifest's signature, then the file's SHA-256 and its own signature)
before pip sees any of them, so a file that fails installs nothing. Link's own distributions are
always handed to pip as those checked files, never looked up by name, so a project of the same
name elsewhere can't stand in for one; other dependencies come from pip's usual index.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from link_plugin.errors import LinkError

if TYPE_CHECKING:
    from packaging.version import Version
    from rich.console import Console

    from lnk.release import Distribution, Manifest, ReleaseIndex

# Finding an installed plugin is every start's; installing one is rare: what only installing uses
# (the release index, signatures, packaging, a progress bar) is imported where it installs.

PLUGINS: dict[str, str] = {
    "link-harness": "lnk-harness",
    "openclaw": "lnk-openclaw",
    "hermes": "lnk-hermes",
    "deepseek": "lnk-deepseek",
    "link-memory": "lnk-link-memory",
    "sandbox": "lnk-sandbox",
    "telegram": "lnk-telegram",
    "slack": "lnk-slack",
    "discord": "lnk-discord",
    "whatsapp": "lnk-whatsapp",
    "signal": "lnk-signal",
    "bucket": "lnk-bucket",
}
"""Link's own plugins by name, and the distribution each comes in. Each distribution's console
script has the distribution's name, so `ensure_plugin(PLUGINS[name])` finds or installs it."""

PIP_TIMEOUT = 900.0


class InstallError(LinkError):
    """A plugin that could not be installed; nothing was changed."""


def scripts_folder() -> Path:
    """Where lnk's environment keeps its console scripts, and so every plugin lnk installs."""
    return Path(sysconfig.get_path("scripts"))


def plugin_path(env: Mapping[str, str] | None = None) -> str:
    """PATH, then lnk's own scripts folder: where plugins are looked for (pass it to discovery)."""
    env = os.environ if env is None else env
    folders = [f for f in (env.get("PATH") or "").split(os.pathsep) if f]
    own = str(scripts_folder())
    return os.pathsep.join([*folders, own] if own not in folders else folders)


def find_plugin(executable: str, env: Mapping[str, str] | None = None) -> Path | None:
    found = shutil.which(executable, path=plugin_path(env))
    return Path(found) if found else None


def installed_version(name: str) -> Version | None:
    from packaging.version import Version

    try:
        return Version(importlib.metadata.version(name))
    except importlib.metadata.PackageNotFoundError:
        return None


def with_dependencies(manifest: Manifest, names: list[str]) -> list[Distribution]:
    """The named distributions and those of Link's own they need that aren't installed well enough."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    chosen: dict[str, Distribution] = {}
    pending = list(names)
    while pending:
        name = pending.pop()
        dist = manifest.distribution(name)
        if dist is None:
            raise InstallError(f"The release has no {name}.")
        if canonicalize_name(dist.name) in chosen:
            continue
        chosen[canonicalize_name(dist.name)] = dist
        for line in dist.requires:
            requirement = Requirement(line)
            if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                continue
            if manifest.distribution(requirement.name) is None:
                continue
            have = installed_version(requirement.name)
            if have is None or not requirement.specifier.contains(have, prereleases=True):
                pending.append(requirement.name)
    return list(chosen.values())


@contextmanager
def one_installer() -> Iterator[None]:
    """Two lnk commands installing at once take turns, so pip never runs twice in one environment.

    The lock is kept in lnk's environment itself, not in a home's config folder: homes that share
    one lnk (two `LNK_HOME`s, two users of one install) install into the same place."""
    lock = Path(sys.prefix) / ".lnk-install.lock"
    try:
        handle = lock.open("a")
    except OSError as exc:
        raise InstallError(
            f"lnk's environment ({sys.prefix}) can't be written to ({exc.strerror}), so lnk can't install "
            "plugins into it.",
            "Install lnk with pipx as its README says (an environment of your own), or install the plugin "
            "yourself so that it is on PATH.",
        ) from exc
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def install(index: ReleaseIndex, manifest: Manifest, names: list[str], console: Console) -> list[Distribution]:
    """Check and install the named distributions (with Link's own they need) into lnk's environment."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn

    if importlib.util.find_spec("pip") is None:
        raise InstallError(
            f"lnk's environment ({sys.prefix}) has no pip, so lnk can't install plugins into it.",
            "Reinstall lnk with pipx as its README says, or add pip to that environment.",
        )
    wanted = with_dependencies(manifest, names)
    with tempfile.TemporaryDirectory(prefix="lnk-install-") as tmp:
        files: list[str] = []
        with Progress(
            TextColumn("{task.description}"), BarColumn(), DownloadColumn(), console=console, transient=True
        ) as progress:
            for dist in wanted:
                entry = dist.wheel()
                task = progress.add_task(f"{dist.name} {dist.version}", total=entry.size)

                def advance(done: int, _total: int | None, task: TaskID = task) -> None:
                    progress.update(task, completed=done)

                data = index.fetch(entry, advance)
                path = Path(tmp) / entry.filename
                path.write_bytes(data)
                files.append(str(path))
        console.print(f"Checked the signatures of {', '.join(f'{d.name} {d.version}' for d in wanted)}.", markup=False)
        with console.status(f"Installing {', '.join(d.name for d in wanted)} with pip..."):
            done = pip("install", "--no-input", *files)
    if done.returncode != 0:
        raise InstallError(
            f"pip could not install {', '.join(d.name for d in wanted)}:\n{done.stderr.strip() or done.stdout}",
            "The files were Link's, signed and unchanged; pip's message above says what else went wrong.",
        )
    return wanted


def pip(*args: str) -> subprocess.CompletedProcess[str]:
    """pip, in lnk's own environment (where its plugins are installed and uninstalled)."""
    argv = [sys.executable, "-m", "pip", *args[:1], "--disable-pip-version-check", *args[1:]]
    return subprocess.run(argv, capture_output=True, text=True, timeout=PIP_TIMEOUT, check=False)


def ensure_plugin(executable: str, env: Mapping[str, str] | None = None, console: Console | None = None) -> Path:
    """The path of `executable` (e.g. lnk-telegram), installed from Link's release first if it isn't there."""
    if found := find_plugin(executable, env):
        return found
    from rich.console import Console

    from lnk.release import ReleaseIndex

    console = console or Console(stderr=True)
    with one_installer():
        if found := find_plugin(executable, env):
            return found
        index = ReleaseIndex.from_env(env)
        manifest = index.manifest()
        dist = manifest.providing(executable)
        if dist is None:
            raise InstallError(
                f"{executable} is not installed, and no distribution in Link's release at {index.location} "
                "provides it.",
                "Install it as its author says, so that it is on PATH; `lnk plugins` lists the plugins lnk finds.",
            )
        console.print(f"Installing {dist.name} {dist.version} from Link's release at {index.location}.", markup=False)
        install(index, manifest, [dist.name], console)
    found = find_plugin(executable, env)
    if found is None:
        raise InstallError(f"{dist.name} {dist.version} was installed but {executable} is not in {scripts_folder()}.")
    console.print(f"Installed {executable}.", markup=False)
    return found
