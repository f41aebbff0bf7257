"""The release holds every package at its own version, as a PEP 503 index, every file signed."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Key, source_version

from link_release.build import build_package
from link_release.index import build_release, sign_release
from link_release.tree import Package, TreeError, packages
from lnk.release import Manifest


def manifest_of(release: Path) -> Manifest:
    return Manifest.model_validate_json((release / "manifest.json").read_bytes())


def test_every_package_is_released_at_its_own_version(tree: Path, release: Path) -> None:
    manifest = manifest_of(release)
    expected = sorted(
        [str(p.parent.relative_to(tree)) for p in tree.glob("packages/*/pyproject.toml")]
        + [str(p.parent.relative_to(tree)) for p in tree.glob("adapters/*/pyproject.toml")]
        + ["conformance-kit"]
    )
    assert sorted(d.path for d in manifest.distributions if d.path) == [e for e in expected if "/_" not in e]
    for dist in manifest.distributions:
        assert dist.path
        assert dist.version == source_version(tree / dist.path)
        assert {f.kind for f in dist.files} == {"wheel", "sdist"}
    assert manifest.core == source_version(tree / "packages" / "lnk-core")
    assert manifest.distribution("lnk-telegram") is not None
    assert manifest.distribution("lnk-telegram").scripts == ["lnk-telegram"]  # type: ignore[union-attr]
    # An outside plugin in adapters/ is built and signed as any package, so lnk installs it on first use.
    assert manifest.distribution("lnk-qmd").scripts == ["lnk-qmd"]  # type: ignore[union-attr]


def test_the_simple_index_links_every_file_with_its_sha256(release: Path) -> None:
    manifest = manifest_of(release)
    listing = (release / "simple" / "index.html").read_text()
    for dist in manifest.distributions:
        page = (release / "simple" / dist.name.replace("_", "-").lower() / "index.html").read_text()
        assert f'href="{dist.name.lower()}/"' in listing
        for entry in dist.files:
            assert f'href="../../files/{entry.filename}#sha256={entry.sha256}"' in page
            assert hashlib.sha256((release / "files" / entry.filename).read_bytes()).hexdigest() == entry.sha256


def test_minisign_accepts_every_signature(release: Path, key: Key) -> None:
    signed = [release / "manifest.json", *sorted(p for p in (release / "files").iterdir() if p.suffix != ".minisig")]
    assert len(signed) == 1 + 2 * len(manifest_of(release).distributions)
    for path in signed:
        done = subprocess.run(
            ["minisign", "-V", "-p", str(key.public), "-m", str(path)], capture_output=True, text=True
        )
        assert done.returncode == 0, f"{path.name}: {done.stderr}"
        assert f"file:{path.name}" in done.stdout


def test_only_released_folders_are_found(tmp_path: Path) -> None:
    folders = ("packages/_template", "packages/lnk-a", "packages/notes", "adapters/lnk-b", "testing/lnk-testing")
    for folder in (*folders, "conformance-kit"):
        (tmp_path / folder).mkdir(parents=True)
        if folder != "packages/notes":
            (tmp_path / folder / "pyproject.toml").write_text("")
    assert [p.folder.relative_to(tmp_path).as_posix() for p in packages(tmp_path)] == [
        "packages/lnk-a",
        "adapters/lnk-b",
        "conformance-kit",
    ]


def test_a_version_without_a_changelog_entry_is_refused(tree: Path, tmp_path: Path) -> None:
    package = tmp_path / "link-plugin"
    shutil.copytree(tree / "packages" / "link-plugin", package)
    (package / "CHANGELOG.md").write_text("# Changelog: link-plugin\n\n## 0.0.1\n\n- Long ago.\n")
    with pytest.raises(TreeError, match="CHANGELOG.md has no entry for link-plugin") as caught:
        build_package(Package(package), tmp_path / "out", "0")
    assert caught.value.hint and "## " in caught.value.hint


def test_a_release_is_built_into_a_new_folder_only(tree: Path, release: Path) -> None:
    with pytest.raises(TreeError, match="is not empty"):
        build_release(tree, release)


def test_a_file_changed_after_the_build_is_never_signed(release: Path, key: Key, tmp_path: Path) -> None:
    copy = tmp_path / "release"
    shutil.copytree(release, copy)
    wheel = next((copy / "files").glob("lnk-*.whl"))
    before = (copy / "files" / (wheel.name + ".minisig")).read_text()
    wheel.write_bytes(wheel.read_bytes() + b"\0")
    with pytest.raises(TreeError, match="changed after the build"):
        sign_release(copy, key.secret)
    assert (copy / "files" / (wheel.name + ".minisig")).read_text() == before


def release_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "link_release", *args], capture_output=True, text=True, timeout=120)


def test_verify_checks_with_the_pinned_key_unless_told_otherwise(release: Path, key: Key) -> None:
    refused = release_cli("verify", str(release))
    assert refused.returncode == 1
    assert "not Link's release key" in refused.stderr
    accepted = release_cli("verify", str(release), "--public-key", str(key.public))
    assert accepted.returncode == 0, accepted.stderr
    assert f"signed by {key.secret.public.key_id_hex}" in accepted.stdout
