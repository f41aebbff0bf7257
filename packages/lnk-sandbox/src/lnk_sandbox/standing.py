"""What a sandbox is built from in Link's settings, each file checked once for each change.

Every `run` reads the agent's settings (`settings.toml`: its ID and owner), its grants
(`sandbox.toml`), its harness's grants (`harnesses/<harness>.toml`) and the machine's switch
(`machine.toml`), and each is checked by its model (`grants.py`, `link_plugin.settings`) before
a sandbox is built from it. Checking takes pydantic, which costs more to load than the rest of a
start together, and the files change only when their owner changes them. So what the check
found in each file is kept, with the file's whole text, in `checked.json` in Link's settings
folder: a file that reads the same, byte for byte, as when it was checked gives what was found
then; any other text (a file changed, made or removed) is checked again, and one that fails its
check fails every time, never kept.

No sandbox sees Link's settings folder, so no sandbox can write what is kept: it is exactly as
trusted as the files it was read from. Nothing a sandbox can change is kept here: the folders a
request names are opened and checked on every run (`folders.py`).
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

from link_plugin import __version__ as plugin_release
from link_plugin.errors import LinkError
from link_plugin.layout import Layout
from link_plugin.permissions import Permission
from link_plugin.records import NamedTuple
from lnk_sandbox import __version__ as release

TYPE_CHECKING = False  # `typing` isn't loaded on a run's path (link_plugin.records)
if TYPE_CHECKING:
    from typing import Any

KEPT = "checked.json"
"""In Link's settings folder: each file's text and what its check found, by path."""
EDITION = f"{release}/{plugin_release}"
"""What found it: another release of lnk-sandbox or link-plugin checks every file again."""
_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def named(kind: str, name: str) -> str:
    """An agent's or harness's name, which names files and folders: never a path of its own."""
    if not _FILE_NAME.match(name):
        raise LinkError(
            f"{name!r} is not {'an' if kind[0] in 'aeiou' else 'a'} {kind}'s name.",
            "A name is letters, digits, '.', '_' and '-', starting with one of the first two.",
        )
    return name


class Standing(NamedTuple):
    """An agent's settings and grants, with its harness's, as a sandbox is built from them."""

    agent: str
    id: str
    """The agent's ID: its proxy's sockets are kept under it."""
    owner: str
    harness: str | None
    """The harness whose grants are in `harness_allow` and `harness_risks`; None: none's."""
    permissions: frozenset[str]
    """The agent's own layer: the defaults and what it was allowed, less what it was denied."""
    hosts: tuple[str, ...] | None
    """Its host list; None: any host."""
    tcp: tuple[str, ...]
    """Its named endpoints, host:port."""
    files_read: tuple[str, ...]
    """Home folders kept read-only."""
    harness_allow: tuple[str, ...]
    """What the harness's layer allows (for the harness asked for; none without one)."""
    harness_risks: tuple[str, ...]
    forbids_unsandboxed: bool
    """machine.toml says `unsandboxed = false`."""

    @classmethod
    def of(cls, layout: Layout, agent: str, harness: str | None) -> Standing:
        """The agent's (running `harness`, or none), each file checked or found checked before."""
        named("agent", agent)
        if harness is not None:
            named("harness", harness)
        found = _Found(layout)
        try:
            settings = found.settings(agent)
            mine = found.view("agent", layout.agent_config(agent).sandbox, agent)
            theirs = found.view("harness", layout.harness_grants(harness), harness) if harness else None
            machine = found.view("machine", layout.machine, "")
        finally:
            found.keep()
        return cls(
            agent=agent,
            id=settings["id"],
            owner=settings["owner"],
            harness=harness,
            permissions=frozenset(mine["permissions"]),
            hosts=None if mine["hosts"] is None else tuple(mine["hosts"]),
            tcp=tuple(mine["tcp"]),
            files_read=tuple(mine["files_read"]),
            harness_allow=tuple(theirs["allow"] if theirs else ()),
            harness_risks=tuple(theirs["risks"] if theirs else ()),
            forbids_unsandboxed=machine["forbids_unsandboxed"],
        )

    @property
    def unsandboxed_by_grant(self) -> bool:
        return Permission.UNSANDBOXED in self.harness_allow

    def in_force(self, os_mode: str) -> dict[str, Any]:
        """The grants in force for the agent running the harness: the fields of `Grants`."""
        permissions = self.permissions | set(self.harness_allow)
        sandboxed = Permission.UNSANDBOXED not in permissions or self.forbids_unsandboxed
        warnings = []
        if Permission.LAN in permissions and self.hosts is not None:
            warnings.append("lan gives the network as it is, so the agent's host list doesn't hold while it has lan.")
        if self.forbids_unsandboxed and self.unsandboxed_by_grant:
            warnings.append(
                f"{self.harness} was allowed to run without a sandbox, and this machine forbids it: it won't run."
            )
        return {
            "permissions": {p.value: p.value in permissions for p in Permission},
            "hosts": None if self.hosts is None else list(self.hosts),
            "tcp": list(self.tcp),
            "harness": [name for name in self.harness_allow if name not in self.permissions],
            "sandboxed": sandboxed,
            "mode": os_mode if sandboxed else "none",
            "proxied": sandboxed and Permission.LAN not in permissions,
            "risks": list(self.harness_risks),
            "files_read": list(self.files_read),
            "warnings": warnings,
        }


def owner_of(layout: Layout, agent: str) -> str | None:
    """The owner another agent's settings name; None: there is no such agent."""
    if not _FILE_NAME.match(agent) or not layout.agent_config(agent).settings.is_file():
        return None
    found = _Found(layout)
    try:
        return str(found.settings(agent)["owner"])
    finally:
        found.keep()


class _Found:
    """`checked.json`, read once, and written back once if anything was checked anew."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.path = layout.config / KEPT
        self.files: dict[str, dict[str, Any]] = {}
        self.changed = False
        try:
            kept = json.loads(self.path.read_bytes())
        except (OSError, ValueError):
            return
        if isinstance(kept, dict) and kept.get("edition") == EDITION and isinstance(kept.get("files"), dict):
            self.files = kept["files"]
        # A deleted agent's files leave with its folder: nothing of it stays kept here. (Only an
        # agent's: a file that doesn't exist, as the machine's or a harness's often, is kept too.)
        agents = layout.config / "agents"
        gone = [path for path in self.files if Path(path).parent.parent == agents and not Path(path).parent.is_dir()]
        for path in gone:
            del self.files[path]
        self.changed = bool(gone)

    def settings(self, agent: str) -> dict[str, Any]:
        return self.view("settings", self.layout.agent_config(agent).settings, agent)

    def view(self, kind: str, path: Path, name: str) -> dict[str, Any]:
        """What the check of `kind` found in the file at `path` (about `name`)."""
        text = _text(path)
        kept = self.files.get(str(path))
        if text is not _UNREADABLE and kept is not None and kept.get("kind") == kind and kept.get("text") == text:
            return dict(kept["view"])
        from lnk_sandbox import grants  # pydantic and the models: only for a file that changed

        view = grants.VIEWS[kind](self.layout, name)  # a file that fails its check stops here, every time
        if text is not _UNREADABLE and _text(path) == text:  # kept only when what was checked is what was read
            self.files[str(path)] = {"kind": kind, "text": text, "view": view}
            self.changed = True
        return view

    def keep(self) -> None:
        if not self.changed:
            return
        from link_plugin.files import write_atomic

        data = json.dumps({"edition": EDITION, "files": self.files}, indent=1, sort_keys=True)
        with contextlib.suppress(OSError):  # kept only for speed: the next run checks again
            write_atomic(self.path, data)


_UNREADABLE = object()
"""A file that can't be read as text: never found checked, so its check says what is wrong."""


def _text(path: Path) -> object:
    """The file's text; None when there is none (each model has its defaults for that)."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return _UNREADABLE
