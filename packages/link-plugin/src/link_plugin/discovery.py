"""Finding the plugins on PATH: every executable named lnk-<name>, and what its `contract` says.

Asking is a process per plugin: a caller that keeps answers across runs (lnk keeps them per
release, `lnk.kept`) passes its own way to ask, `ask(path)`, so a plugin isn't asked again."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from link_plugin.calls import PluginProgram
from link_plugin.contract import Contract, Kind
from link_plugin.errors import LinkError
from link_plugin.model import Model

PREFIX = "lnk-"

Ask = Callable[[Path], Contract]
"""How a plugin's `contract` is asked, given its path (a LinkError when it can't answer)."""


class Found(Model):
    """One executable found on PATH, and what its `contract` said (or why it said nothing)."""

    executable: str
    path: str
    kind: Kind | None = None
    name: str | None = None
    version: int | None = None
    release: str | None = None
    error: str | None = None


def executables(env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """lnk-* executables on PATH, the first of each name winning as the shell's would."""
    env = os.environ if env is None else env
    found: dict[str, Path] = {}
    for folder in (env.get("PATH") or "").split(os.pathsep):
        if not folder or not os.path.isdir(folder):
            continue
        for entry in sorted(os.listdir(folder)):
            path = Path(folder) / entry
            if entry.startswith(PREFIX) and entry not in found and path.is_file() and os.access(path, os.X_OK):
                found[entry] = path
    return found


def _identify(executable: str, path: Path, ask: Ask) -> Found:
    try:
        answer = ask(path)
    except LinkError as exc:
        return Found(executable=executable, path=str(path), error=str(exc))
    return Found(
        executable=executable,
        path=str(path),
        kind=answer.kind,
        name=answer.name,
        version=answer.version,
        release=answer.release,
    )


def discover(env: Mapping[str, str] | None = None, ask: Ask | None = None, leave: Collection[str] = ()) -> list[Found]:
    """Every lnk-* executable on `env`'s PATH with its kind and contract version; a broken one with
    its error. Each is asked by `ask` (afresh, with `env`, unless given); those named in `leave`
    (whose kind the caller knows) are neither asked nor listed."""
    found = {name: path for name, path in executables(env).items() if name not in leave}
    asked = ask or (lambda path: PluginProgram(str(path), env=env, timeout=15.0).contract())
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda item: _identify(item[0], item[1], asked), found.items()))
