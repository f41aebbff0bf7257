"""An index (one file, memory's) kept in a bucket: segments named by their SHA-256, a manifest last.

    <remote>/segments/<sha256>                 8 MiB each (the last shorter), never changed
    <remote>/manifests/<version>.json          {version, size, segments}: the file, in order
    <remote>/manifests/<version>.claim-<id>    a writer's claim on that version (empty)

Reading takes the highest manifest and the segments it names, each checked against its name, into
a temporary file renamed over the one asked for: a read that fails leaves that file as it was.

A write of the very file the latest version holds writes nothing and answers that version, so a
backup of an index that didn't change leaves no version behind.

Writing is compare-and-swap over a remote that offers no conditional write, only files and
listings that show what was written before them (a folder, S3, WebDAV). A writer names the
version it read (`over`); the write is refused when a newer manifest is there, or when another
writer claims the same next version at the same time. Otherwise the segments the bucket doesn't
have are uploaded, then the writer claims the next version (a file of its own, never
overwritten), lists the claims, and writes the manifest only when its claim is the only one:
of two writers that claimed, the later one's listing shows the earlier's claim, so at most one
sees itself alone. A writer that met another backs off a random moment, takes its claim away
and is refused; the caller reads again, makes its change over what it read and writes again,
so both changes survive. A claim left by a writer that stopped half-way is ignored after
`CLAIM_LAPSE`. Nothing is ever deleted: an old segment stays, as the files of a backup do.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import secrets
import tempfile
import time
from datetime import datetime
from pathlib import Path

from link_plugin.bucket import SEGMENT_SIZE, IndexVersion
from link_plugin.errors import LinkError
from lnk_bucket.rclone import Rclone

CLAIM_LAPSE = 300.0
"""Seconds after which a claim with no manifest is taken for a writer that stopped half-way."""

_MANIFEST = re.compile(r"^(\d{12})\.json$")
_CLAIM = re.compile(r"^(\d{12})\.claim-([0-9a-f]{16})$")


def _name(version: int) -> str:
    return f"{version:012d}"


class IndexStore:
    def __init__(self, rclone: Rclone, remote: str) -> None:
        self.rclone = rclone
        self.remote = remote.rstrip("/")

    @property
    def manifests(self) -> str:
        return f"{self.remote}/manifests"

    @property
    def segments(self) -> str:
        return f"{self.remote}/segments"

    def _listing(self) -> list[tuple[str, str]]:
        return self.rclone.names(self.manifests, f"listing the index at {self.remote}")

    def latest(self, listing: list[tuple[str, str]] | None = None) -> int:
        found = [int(m.group(1)) for name, _ in (listing or self._listing()) if (m := _MANIFEST.match(name))]
        return max(found, default=0)

    def manifest(self, version: int) -> IndexVersion:
        with tempfile.TemporaryDirectory(prefix="lnk-bucket-") as scratch:
            path = Path(scratch) / "manifest.json"
            self.rclone.copy_file(
                f"{self.manifests}/{_name(version)}.json", str(path), f"reading the index's version {version}"
            )
            try:
                found = IndexVersion.model_validate_json(path.read_text())
            except ValueError:
                raise LinkError(
                    f"The index's manifest {version} at {self.remote} isn't one lnk-bucket wrote",
                    "Nothing was changed here. Check that the bucket holds an index kept by Link.",
                ) from None
        if found.version != version:
            raise LinkError(f"The index's manifest {version} at {self.remote} names version {found.version}")
        return found

    def read(self, into: Path) -> IndexVersion:
        """The latest version into `into` (whole, or not at all); version 0 leaves it as it was."""
        version = self.latest()
        if version == 0:
            return IndexVersion(version=0)
        wanted = self.manifest(version)
        with tempfile.TemporaryDirectory(prefix=".lnk-index-", dir=into.parent) as scratch:
            work = Path(scratch)
            unique = sorted(set(wanted.segments))
            self.rclone.copy(self.segments, str(work), f"reading the index's segments at {self.remote}", unique)
            joined = work / "joined"
            with joined.open("wb") as out:
                for digest in wanted.segments:
                    data = (work / digest).read_bytes() if (work / digest).is_file() else b""
                    if hashlib.sha256(data).hexdigest() != digest:
                        raise LinkError(
                            f"The index's segment {digest} at {self.remote} is missing or isn't what its name says",
                            f"{into} was left as it was. The bucket was changed by something other than Link.",
                        )
                    out.write(data)
            if joined.stat().st_size != wanted.size:
                raise LinkError(
                    f"The index at {self.remote} isn't the size its manifest says", f"{into} was left as it was."
                )
            os.replace(joined, into)
        return wanted

    def write(self, source: Path, over: int) -> IndexVersion:
        """`source` as the version after `over`, unless another writer got there first (refused)."""
        listing = self._listing()
        latest = self.latest(listing)
        if latest != over:
            return IndexVersion(version=latest, refused=True)
        size = source.stat().st_size
        with tempfile.TemporaryDirectory(prefix="lnk-bucket-") as scratch:
            work = Path(scratch)
            digests = _split(source, work)
            if over and (current := self.manifest(over)).size == size and current.segments == digests:
                return current  # the same file as the latest version: a version more would say nothing new
            have = {name for name, _ in self.rclone.names(self.segments, f"listing the index at {self.remote}")}
            new = sorted(set(digests) - have)
            if new:
                self.rclone.copy(str(work), self.segments, f"sending the index's segments to {self.remote}", new)
            version = over + 1
            claim = f"{_name(version)}.claim-{secrets.token_hex(8)}"
            (work / claim).touch()
            self.rclone.copy_file(str(work / claim), f"{self.manifests}/{claim}", f"claiming version {version}")
            listing = self._listing()
            if self.latest(listing) != over or _others(listing, version, claim):
                # Another writer: step aside for a moment so the two don't meet again at once.
                time.sleep(random.uniform(0.05, 0.5))
                self.rclone.run(["deletefile", f"{self.manifests}/{claim}"], f"taking back a claim at {self.remote}")
                return IndexVersion(version=self.latest(), refused=True)
            written = IndexVersion(version=version, size=size, segments=digests, uploaded=len(new))
            manifest = work / f"{_name(version)}.json"
            manifest.write_text(written.model_dump_json(exclude={"uploaded", "refused"}))
            self.rclone.copy_file(str(manifest), f"{self.manifests}/{manifest.name}", f"writing version {version}")
        return written


def _split(source: Path, into: Path) -> list[str]:
    digests = []
    with source.open("rb") as given:
        while chunk := given.read(SEGMENT_SIZE):
            digest = hashlib.sha256(chunk).hexdigest()
            (into / digest).write_bytes(chunk)
            digests.append(digest)
    return digests


def _others(listing: list[tuple[str, str]], version: int, mine: str) -> bool:
    """Whether another writer's claim on `version` is there and recent enough to count."""
    now = time.time()
    for name, modified in listing:
        match = _CLAIM.match(name)
        if match is None or name == mine or int(match.group(1)) != version:
            continue
        if now - _seconds(modified) < CLAIM_LAPSE:
            return True
    return False


def _seconds(stamp: str) -> float:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time()  # a remote that keeps no time: the claim counts
