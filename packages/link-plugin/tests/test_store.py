"""A harness's release built once in a store and linked from each home; built in the home where
the store can't be written; never half made."""

from __future__ import annotations

from pathlib import Path

import pytest

from link_plugin.errors import LinkError
from link_plugin.store import Release

builds: list[Path] = []


def _build(folder: Path) -> None:
    builds.append(folder)
    (folder / "bin").mkdir()
    (folder / "bin" / "harness").write_text("#!/bin/sh\n")


def _failing(folder: Path) -> None:
    (folder / "half").write_text("made")
    raise LinkError("the registry didn't answer", "Try again.")


def _release(build=_build) -> Release:  # type: ignore[no-untyped-def]
    return Release(
        adapter="lnk-sample",
        folder="sample-1.0",
        link="sample",
        what="Sample 1.0",
        pin="pin1",
        build=build,
        runs="bin/harness",
    )


@pytest.fixture(autouse=True)
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    builds.clear()
    monkeypatch.setenv("LNK_SAMPLE_STORE", str(tmp_path / "store"))
    return tmp_path / "store"


def test_a_second_home_links_to_the_store_and_builds_nothing(tmp_path: Path, store: Path) -> None:
    release = _release()
    assert "shared store" in release.install(tmp_path / "one")
    assert "shared store" in release.install(tmp_path / "two")
    assert len(builds) == 1
    for home in ("one", "two"):
        assert (tmp_path / home / "sample").resolve() == (store / "sample-1.0").resolve()
        assert release.installed(tmp_path / home)
    assert sorted(p.name for p in store.iterdir()) == ["sample-1.0"]


def test_a_store_that_cant_be_written_leaves_the_release_in_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "read-only").write_text("")  # a store below a file can't be made, as in a sandbox
    monkeypatch.setenv("LNK_SAMPLE_STORE", str(tmp_path / "read-only" / "store"))
    said = _release().install(tmp_path / "home")
    link = tmp_path / "home" / "sample"
    assert "installed in" in said and link.is_dir() and not link.is_symlink()
    assert _release().installed(tmp_path / "home")
    with pytest.raises(LinkError, match="can't be written"):
        _release().install(None)


def test_another_pin_is_another_release(tmp_path: Path) -> None:
    _release().install(tmp_path / "home")
    newer = Release(**{**_release().__dict__, "pin": "pin2"})
    assert not newer.installed(tmp_path / "home")
    newer.install(tmp_path / "home")
    assert len(builds) == 2 and newer.installed(tmp_path / "home")


def test_a_build_that_fails_leaves_nothing_half_made(tmp_path: Path, store: Path) -> None:
    with pytest.raises(LinkError, match="registry"):
        _release(_failing).install(tmp_path / "home")
    assert list(store.iterdir()) == []
    assert not (tmp_path / "home" / "sample").exists()
