"""Link's release index: its signed manifest, and every file read from it checked before use.

An index is a folder or a URL laid out as release/ writes it:

    manifest.json, manifest.json.minisig     every distribution, version, file and SHA-256, signed
    files/<file>, files/<file>.minisig       each wheel and sdist, signed
    simple/                                  the same files as a PEP 503 index, for pip and pipx

Where it is: LNK_INDEX, else `index` in machine.toml, else Link's published index.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Literal

from packaging.tags import sys_tags
from packaging.utils import canonicalize_name, parse_wheel_filename
from pydantic import ConfigDict, Field, ValidationError

from link_plugin.answers import describe_errors
from link_plugin.errors import LinkError
from link_plugin.files import load_toml
from link_plugin.layout import Layout
from link_plugin.model import Model
from link_plugin.settings import MachineSettings
from lnk.signing import SUFFIX, PublicKey, SignatureError, release_key, verify

ENV_INDEX = "LNK_INDEX"
DEFAULT_INDEX = "https://lnk-dev.github.io/lnk/"
MANIFEST = "manifest.json"
FILES = "files"
SIMPLE = "simple"
FORMAT = 1
CHUNK = 1 << 16

Progress = Callable[[int, int | None], None]
"""Called with the bytes read so far and the whole size, when known."""


class ReleaseError(LinkError):
    """The release index can't be read, or holds something other than what Link signed."""


class _Model(Model):
    # A manifest written by a newer release keeps what this lnk doesn't know.
    model_config = ConfigDict(extra="allow")


class ReleaseFile(_Model):
    filename: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
    kind: Literal["wheel", "sdist"]
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size: int


class Origin(_Model):
    """Where an outside harness adapter was built from, at the core's version, signed with Link's key."""

    repository: str
    commit: str


class Distribution(_Model):
    name: str
    version: str
    scripts: list[str] = Field(default_factory=list)
    """The console scripts its wheel installs: a plugin's lnk-<name>."""
    requires: list[str] = Field(default_factory=list)
    """Its wheel's Requires-Dist lines."""
    files: list[ReleaseFile]
    path: str | None = None
    """Its folder in Link's repository."""
    origin: Origin | None = None
    """None for a package of Link's own repository."""

    def wheel(self) -> ReleaseFile:
        """The wheel this Python can install."""
        supported = set(sys_tags())
        for entry in self.files:
            if entry.kind == "wheel" and parse_wheel_filename(entry.filename)[3] & supported:
                return entry
        raise ReleaseError(f"The release has no wheel of {self.name} {self.version} for this Python and system.")


class Manifest(_Model):
    format: int = FORMAT
    core: str
    """lnk's version in this release: outside adapters are built at it."""
    commit: str | None = None
    created: datetime
    distributions: list[Distribution]

    def distribution(self, name: str) -> Distribution | None:
        wanted = canonicalize_name(name)
        return next((d for d in self.distributions if canonicalize_name(d.name) == wanted), None)

    def providing(self, executable: str) -> Distribution | None:
        return next((d for d in self.distributions if executable in d.scripts), None)


def index_location(env: Mapping[str, str] | None = None) -> str:
    """LNK_INDEX, else machine.toml's `index`, else Link's published index."""
    env = os.environ if env is None else env
    if env.get(ENV_INDEX):
        return env[ENV_INDEX]
    machine = Layout.from_env(env).machine
    if machine.is_file() and (index := load_toml(machine, MachineSettings).index):
        return index
    return DEFAULT_INDEX


class ReleaseIndex:
    """A release index (a folder, or a URL), read only through its signatures."""

    def __init__(self, location: str, key: PublicKey) -> None:
        self.key = key
        self.location = location
        parsed = urllib.parse.urlsplit(location)
        # The index's root, even when given as its simple/ folder as pip and pipx take it.
        base = location.rstrip("/").removesuffix(f"/{SIMPLE}")
        self._url = f"{base}/" if parsed.scheme in ("http", "https", "file") else None
        self._folder = None if self._url else Path(base).expanduser()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ReleaseIndex:
        return cls(index_location(env), release_key(env))

    def read(self, relative: str, progress: Progress | None = None) -> bytes:
        if self._folder is not None:
            path = self._folder / relative
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise self._unreadable(relative, exc.strerror or str(exc)) from exc
            if progress:
                progress(len(data), len(data))
            return data
        assert self._url is not None
        try:
            with urllib.request.urlopen(urllib.parse.urljoin(self._url, relative), timeout=60) as response:
                size = response.headers.get("Content-Length")
                total = int(size) if size and size.isdigit() else None
                chunks: list[bytes] = []
                read = 0
                while chunk := response.read(CHUNK):
                    chunks.append(chunk)
                    read += len(chunk)
                    if progress:
                        progress(read, total)
                return b"".join(chunks)
        except (urllib.error.URLError, OSError) as exc:
            raise self._unreadable(relative, str(getattr(exc, "reason", exc))) from exc

    def _unreadable(self, relative: str, why: str) -> ReleaseError:
        return ReleaseError(
            f"Can't read {relative} from Link's release index at {self.location}: {why}.",
            f"Check the network, or point {ENV_INDEX} or `index` in machine.toml at a release folder or URL.",
        )

    def _refused(self, exc: SignatureError) -> ReleaseError:
        return ReleaseError(
            f"Refused the release at {self.location}: {exc.message}",
            f"lnk installs nothing from it. Check where {ENV_INDEX} or `index` in machine.toml points.",
        )

    def manifest(self) -> Manifest:
        """The release manifest, once its signature holds."""
        data = self.read(MANIFEST)
        try:
            verify(data, self.read(MANIFEST + SUFFIX).decode(errors="replace"), MANIFEST, self.key)
        except SignatureError as exc:
            raise self._refused(exc) from exc
        try:
            manifest = Manifest.model_validate_json(data)
        except ValidationError as exc:
            raise ReleaseError(
                f"The release manifest at {self.location} is not one lnk reads: {describe_errors(exc)}."
            ) from exc
        if manifest.format > FORMAT:
            raise ReleaseError(
                f"The release at {self.location} is in format {manifest.format}; this lnk reads {FORMAT}.",
                "Install a newer lnk the way you installed this one (e.g. `pipx upgrade lnk`).",
            )
        return manifest

    def fetch(self, entry: ReleaseFile, progress: Progress | None = None) -> bytes:
        """A file named in the (checked) manifest, once its SHA-256 and its signature hold."""
        relative = f"{FILES}/{entry.filename}"
        data = self.read(relative, progress)
        try:
            if hashlib.sha256(data).hexdigest() != entry.sha256:
                raise SignatureError(f"{entry.filename} is not the file the release manifest names (SHA-256 differs).")
            verify(data, self.read(relative + SUFFIX).decode(errors="replace"), entry.filename, self.key)
        except SignatureError as exc:
            raise self._refused(exc) from exc
        return data
