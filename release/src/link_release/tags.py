"""Per-package version tags, `<distribution>==<version>`, one for each version ever released.

A package whose folder changed since its version's tag, with the version unchanged, is refused:
the same name and version must always mean the same files.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from link_release.tree import TreeError
from lnk.release import Distribution, Manifest


def tag_name(dist: Distribution) -> str:
    return f"{dist.name}=={dist.version}"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)


def plan(root: Path, manifest: Manifest) -> list[tuple[str, bool]]:
    """Each of the release's tags and whether it is new; refuses a changed package at a tagged version."""
    planned: list[tuple[str, bool]] = []
    for dist in manifest.distributions:
        if dist.origin is not None or dist.path is None:
            continue  # An outside adapter is tagged in its own repository.
        tag = tag_name(dist)
        if _git(root, "rev-parse", "-q", "--verify", f"refs/tags/{tag}").returncode != 0:
            planned.append((tag, True))
            continue
        if _git(root, "diff", "--quiet", tag, manifest.commit or "HEAD", "--", dist.path).returncode != 0:
            raise TreeError(
                f"{dist.path} changed since {tag}, but {dist.name} is still {dist.version}.",
                f"Raise the version in {dist.path} and add its CHANGELOG.md entry.",
            )
        planned.append((tag, False))
    return planned


def create(root: Path, manifest: Manifest) -> list[str]:
    """Tag the release's commit with every new `<distribution>==<version>`."""
    made = []
    for tag, new in plan(root, manifest):
        if new:
            done = _git(root, "tag", "-a", "-m", tag, tag, manifest.commit or "HEAD")
            if done.returncode != 0:
                raise TreeError(f"git could not make the tag {tag}: {done.stderr.strip()}")
            made.append(tag)
    return made
