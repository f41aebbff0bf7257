"""What a release is made of: every package folder in the tree, found rather than listed.

Every folder under packages/ and adapters/ (outside plugins, each laid out as its own repository
would be, and installed on first use like any plugin) with a pyproject.toml, except those whose
name starts with `_` (the template), and the conformance kit. testing/ and release/ are the
repository's own tools and never released.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from link_plugin.errors import LinkError

RELEASED_FOLDERS = ("packages", "adapters")
RELEASED_BESIDE_PACKAGES = ("conformance-kit",)


class TreeError(LinkError):
    """A package that can't be released as it is."""


@dataclass(frozen=True)
class Package:
    folder: Path

    @property
    def label(self) -> str:
        return self.folder.name

    def changelog_has(self, version: str) -> bool:
        changelog = self.folder / "CHANGELOG.md"
        if not changelog.is_file():
            return False
        return re.search(rf"^##\s+\[?{re.escape(version)}\]?(\s|$)", changelog.read_text(), re.MULTILINE) is not None


def packages(root: Path) -> list[Package]:
    """The released packages of the tree at `root`, in a stable order."""
    found = [
        Package(p.parent)
        for folder in RELEASED_FOLDERS
        for p in sorted((root / folder).glob("*/pyproject.toml"))
        if not p.parent.name.startswith(("_", "."))
    ]
    found += [Package(root / name) for name in RELEASED_BESIDE_PACKAGES if (root / name / "pyproject.toml").is_file()]
    if not found:
        raise TreeError(f"No packages under {root / 'packages'}: is {root} the repository's root?")
    return found
