"""push and pull: what changed is copied, nothing is deleted, links are never followed."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import Bucket


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_push_copies_only_what_changed_and_deletes_nothing(bucket: Bucket, tmp_path: Path) -> None:
    home, remote = tmp_path / "Home", tmp_path / "bucket"
    (home / "memory").mkdir(parents=True)
    (home / "memory" / "notes.md").write_text("the boat is blue\n")
    (home / "work.txt").write_text("draft\n")
    assert bucket("push", home, remote) == {"copied": 2}
    assert bucket("push", home, remote) == {"copied": 0}

    (home / "memory" / "notes.md").write_text("the boat is blue\nthe car is red\n")
    (home / "work.txt").unlink()
    assert bucket("push", home, remote) == {"copied": 1}
    assert _files(remote) == {"memory/notes.md": "the boat is blue\nthe car is red\n", "work.txt": "draft\n"}


def test_links_are_never_followed_hard_links_are_files(bucket: Bucket, tmp_path: Path) -> None:
    home, remote, outside = tmp_path / "Home", tmp_path / "bucket", tmp_path / "secret"
    outside.mkdir()
    (outside / "key").write_text("sk-not-for-the-bucket\n")
    home.mkdir()
    (home / "key").symlink_to(outside / "key")
    (home / "keys").symlink_to(outside)
    (home / "a.txt").write_text("kept\n")
    os.link(home / "a.txt", home / "b.txt")
    bucket("push", home, remote)
    assert _files(remote) == {"a.txt": "kept\n", "b.txt": "kept\n"}
    assert not any(p.is_symlink() for p in remote.rglob("*"))


def test_pull_overwrites_and_keeps_what_is_only_here(bucket: Bucket, tmp_path: Path) -> None:
    remote, home = tmp_path / "bucket", tmp_path / "Home"
    remote.mkdir()
    (remote / "a.txt").write_text("from the bucket\n")
    home.mkdir()
    (home / "a.txt").write_text("older, here\n")
    (home / "only-here.txt").write_text("mine\n")
    assert bucket("pull", remote, home) == {"copied": 1}
    assert _files(home) == {"a.txt": "from the bucket\n", "only-here.txt": "mine\n"}


def test_delete_takes_the_folder_and_says_when_nothing_was_there(bucket: Bucket, tmp_path: Path) -> None:
    remote = tmp_path / "bucket"
    (remote / "files").mkdir(parents=True)
    (remote / "files" / "a").write_text("a")
    assert bucket("delete", remote) == {"deleted": True}
    assert not remote.exists()
    assert bucket("delete", remote) == {"deleted": False}


def test_bad_input_is_a_clear_error(bucket: Bucket, tmp_path: Path) -> None:
    home = tmp_path / "Home"
    home.mkdir()
    code, answer, stderr = bucket.call("push", home, "nowhere:bucket", ok=False)
    assert code == 1 and "didn't find section in config file" in answer["error"]
    assert "lnk bucket config" in answer["hint"] and "Traceback" not in stderr

    code, answer, _ = bucket.call("push", tmp_path / "missing", tmp_path / "bucket", ok=False)
    assert code == 1 and "isn't a folder to push" in answer["error"]
    assert not (tmp_path / "bucket").exists()

    code, answer, _ = bucket.call("get", tmp_path / "bucket" / "none.json", tmp_path / "x", ok=False)
    assert code == 1 and "reading" in answer["error"]
