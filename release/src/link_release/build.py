"""Building each package's wheel and sdist, at its own version, and reading back what they hold."""

from __future__ import annotations

import configparser
import email.parser
import hashlib
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from build import BuildBackendException, ProjectBuilder
from pyproject_hooks import quiet_subprocess_runner

from link_release.tree import Package, TreeError
from lnk.release import Distribution, ReleaseFile


def source_date_epoch(root: Path) -> str:
    """The release commit's time, so building the same commit again gives the same bytes."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return os.environ["SOURCE_DATE_EPOCH"]
    done = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=root, capture_output=True, text=True)
    stamp = done.stdout.strip()
    return stamp if done.returncode == 0 and stamp.isdigit() else str(int(time.time()))


def _runner(epoch: str) -> Callable[..., None]:
    def run(cmd: Sequence[str], cwd: str | None = None, extra_environ: Mapping[str, str] | None = None) -> None:
        quiet_subprocess_runner(cmd, cwd, {**(extra_environ or {}), "SOURCE_DATE_EPOCH": epoch})

    return run


def release_file(path: Path, kind: str) -> ReleaseFile:
    data = path.read_bytes()
    return ReleaseFile.model_validate(
        {"filename": path.name, "kind": kind, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    )


def wheel_metadata(wheel: Path) -> tuple[dict[str, list[str]], list[str]]:
    """The wheel's METADATA fields (each a list of values) and its console scripts."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        message = email.parser.BytesParser().parsebytes(archive.read(f"{info}/METADATA"))
        entry_points = configparser.ConfigParser(delimiters=("=",))
        entry_points.optionxform = str  # type: ignore[assignment,method-assign]
        if f"{info}/entry_points.txt" in names:
            entry_points.read_string(archive.read(f"{info}/entry_points.txt").decode())
    fields: dict[str, list[str]] = {}
    for key, value in message.items():
        fields.setdefault(key, []).append(str(value))
    scripts = sorted(entry_points.options("console_scripts")) if entry_points.has_section("console_scripts") else []
    return fields, scripts


def build_package(package: Package, into: Path, epoch: str) -> Distribution:
    """Build one package's sdist and wheel into `into`; refuse a version its changelog doesn't name."""
    builder = ProjectBuilder(package.folder, python_executable=sys.executable, runner=_runner(epoch))
    try:
        sdist = Path(builder.build("sdist", into))
        wheel = Path(builder.build("wheel", into))
    except BuildBackendException as exc:
        raise TreeError(f"{package.label} did not build: {exc}.") from exc
    fields, scripts = wheel_metadata(wheel)
    name, version = fields["Name"][0], fields["Version"][0]
    if not package.changelog_has(version):
        raise TreeError(
            f"{package.label}'s CHANGELOG.md has no entry for {name} {version}.",
            f"Add a `## {version}` section saying what changed, then build again.",
        )
    return Distribution(
        name=name,
        version=version,
        scripts=scripts,
        requires=fields.get("Requires-Dist", []),
        files=[release_file(wheel, "wheel"), release_file(sdist, "sdist")],
    )
