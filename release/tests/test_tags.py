"""Each released version is tagged `<distribution>==<version>`; a changed package must change its version."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import git

from link_release import tags
from link_release.tree import TreeError
from lnk.release import Manifest


@pytest.fixture
def repo(tree: Path, tmp_path: Path) -> Path:
    git(tmp_path, "clone", "-q", str(tree), "repo")
    return tmp_path / "repo"


@pytest.fixture
def manifest(release: Path) -> Manifest:
    return Manifest.model_validate(json.loads((release / "manifest.json").read_text()))


def test_new_versions_are_tagged_once(repo: Path, manifest: Manifest) -> None:
    expected = [f"{d.name}=={d.version}" for d in manifest.distributions]
    assert tags.plan(repo, manifest) == [(tag, True) for tag in expected]
    assert tags.create(repo, manifest) == expected
    assert sorted(git(repo, "tag", "-l").splitlines()) == sorted(expected)
    assert git(repo, "rev-list", "-n1", expected[0]) == manifest.commit
    assert tags.create(repo, manifest) == []


def test_a_package_changed_under_a_tagged_version_is_refused(repo: Path, manifest: Manifest) -> None:
    tags.create(repo, manifest)
    readme = repo / "packages" / "link-plugin" / "README.md"
    readme.write_text(readme.read_text() + "\nOne more line.\n")
    git(repo, "commit", "-q", "-am", "a change without a new version")
    later = manifest.model_copy(update={"commit": git(repo, "rev-parse", "HEAD")})
    plugin = manifest.distribution("link-plugin")
    assert plugin
    changed = f"packages/link-plugin changed since link-plugin=={plugin.version}"
    with pytest.raises(TreeError, match=re.escape(changed)) as caught:
        tags.plan(repo, later)
    assert caught.value.hint and "Raise the version" in caught.value.hint
