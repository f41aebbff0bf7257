"""The bucket's interface: `lnk-bucket <command>`, what the core asks of a bucket.

A bucket is a folder somewhere rclone reaches: a cloud's bucket (`s3:my-bucket/work`), a server
(`webdav:backups/work`) or a plain folder (`/mnt/disk/work`). lnk-bucket is Link's own part and
meets the core only here, as lnk-sandbox does; it drives rclone, pinned and checked, with the
remotes of Link's own rclone settings (`rclone.conf` in Link's settings folder, which no sandbox
shows). It knows folders and an index, nothing about agents or harnesses.

    lnk-bucket contract                         {kind: bucket, version, name, release}
    lnk-bucket check                            the rclone it runs: {rclone, path, sha256}
    lnk-bucket push FOLDER REMOTE               every file changed since it was last there, copied;
                                                nothing deleted there; links never followed
    lnk-bucket pull REMOTE FOLDER               the same the other way: files overwritten, none deleted
    lnk-bucket get REMOTE FILE                  one file from the bucket (exit 1 when it isn't there)
    lnk-bucket put FILE REMOTE                  one file into the bucket
    lnk-bucket delete REMOTE                    the folder and everything in it, gone
    lnk-bucket index read REMOTE FILE           the index's latest version, into FILE
    lnk-bucket index write REMOTE FILE --over V FILE as the next version, only if V is still the latest
    lnk-bucket rclone ARGS...                   the pinned rclone with Link's rclone settings (setup)

Every command but `rclone` answers one JSON object on stdout, with the exit codes of every plugin.
"""

from __future__ import annotations

from pydantic import Field

from link_plugin.answers import Answer

SEGMENT_SIZE = 8 << 20
"""An index is kept in a bucket as segments of this size (8 MiB), each named by its SHA-256."""


class Checked(Answer):
    """`check`: the rclone lnk-bucket runs, once its SHA-256 matched the pin."""

    rclone: str
    """Its version."""
    path: str
    sha256: str


class Copied(Answer):
    """`push`, `pull`, `get`, `put`: how many files were copied (those that hadn't changed weren't)."""

    copied: int = 0


class Deleted(Answer):
    """`delete`: whether there was anything to delete."""

    deleted: bool


class IndexVersion(Answer):
    """`index read` and `index write`: a version of the index, as its manifest names it.

    Version 0 is an index not kept there yet (read leaves FILE as it was). A write that was
    `refused` changed nothing there: another writer wrote `version` since the one it was over, so
    the writer reads again, makes its change over that and writes again."""

    version: int = Field(ge=0)
    size: int = 0
    segments: list[str] = Field(default_factory=list)
    """Each segment's SHA-256, in order: the file is their concatenation."""
    uploaded: int = 0
    """write: how many segments weren't in the bucket yet (only those are sent)."""
    refused: bool = False
