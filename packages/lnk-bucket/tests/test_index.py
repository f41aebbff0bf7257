"""Memory's index in a bucket: 8 MiB segments named by their SHA-256, a manifest last, and a
write that holds only over the version it read."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from conftest import Bucket

MIB = 1 << 20


def test_a_file_goes_as_segments_and_comes_back_whole(bucket: Bucket, tmp_path: Path) -> None:
    remote, index = tmp_path / "bucket" / "memory", tmp_path / "index.db"
    data = bytearray((i * 7919) % 251 for i in range(17 * MIB))
    index.write_bytes(data)
    first = bucket("index", "write", remote, index, "--over", "0")
    assert first["version"] == 1 and first["size"] == 17 * MIB and first["uploaded"] == 3
    assert sorted(p.name for p in (remote / "segments").iterdir()) == sorted(first["segments"])
    assert (remote / "manifests" / "000000000001.json").is_file()

    data[9 * MIB] ^= 0xFF  # one byte in the second segment
    index.write_bytes(data)
    second = bucket("index", "write", remote, index, "--over", "1")
    assert second["version"] == 2 and second["uploaded"] == 1
    assert second["segments"][0] == first["segments"][0] and second["segments"][2] == first["segments"][2]

    back = tmp_path / "back.db"
    assert bucket("index", "read", remote, back)["version"] == 2
    assert back.read_bytes() == bytes(data)


def test_writing_the_latest_version_again_writes_no_version(bucket: Bucket, tmp_path: Path) -> None:
    remote, index = tmp_path / "bucket", tmp_path / "index.db"
    index.write_bytes(b"unchanged since the last backup" * 1000)
    first = bucket("index", "write", remote, index, "--over", "0")
    again = bucket("index", "write", remote, index, "--over", "1")
    assert again["version"] == 1 and again["uploaded"] == 0 and again["refused"] is False
    assert again["segments"] == first["segments"]
    assert [p.name for p in (remote / "manifests").glob("*.json")] == ["000000000001.json"]
    index.write_bytes(b"changed")
    assert bucket("index", "write", remote, index, "--over", "1")["version"] == 2


def test_nothing_there_reads_as_version_zero_and_leaves_the_file(bucket: Bucket, tmp_path: Path) -> None:
    index = tmp_path / "index.db"
    index.write_text("what was here")
    assert bucket("index", "read", tmp_path / "bucket", index) == {
        "version": 0,
        "size": 0,
        "segments": [],
        "uploaded": 0,
        "refused": False,
    }
    assert index.read_text() == "what was here"


def test_a_write_over_an_old_version_is_refused_and_changes_nothing(bucket: Bucket, tmp_path: Path) -> None:
    remote, index = tmp_path / "bucket", tmp_path / "index.db"
    index.write_text("one")
    bucket("index", "write", remote, index, "--over", "0")
    index.write_text("two, over nothing")
    refused = bucket("index", "write", remote, index, "--over", "0")
    assert refused["refused"] is True and refused["version"] == 1
    back = tmp_path / "back"
    bucket("index", "read", remote, back)
    assert back.read_text() == "one"


def test_a_damaged_segment_leaves_the_file_as_it_was(bucket: Bucket, tmp_path: Path) -> None:
    remote, index = tmp_path / "bucket", tmp_path / "index.db"
    index.write_bytes(b"the index" * 1000)
    written = bucket("index", "write", remote, index, "--over", "0")
    (remote / "segments" / written["segments"][0]).write_bytes(b"changed in the bucket")
    here = tmp_path / "here.db"
    here.write_text("the index this machine had")
    code, answer, _ = bucket.call("index", "read", remote, here, ok=False)
    assert code == 1 and "isn't what its name says" in answer["error"]
    assert here.read_text() == "the index this machine had"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bucket", "config", "here.db", "index.db"]


def _add(index: Path, fact: str) -> None:
    with sqlite3.connect(index) as db:
        db.execute("create table if not exists facts (fact text)")
        db.execute("insert into facts values (?)", (fact,))
    db.close()


def test_two_writers_at_once_both_keep_their_changes(bucket: Bucket, tmp_path: Path) -> None:
    remote = tmp_path / "bucket"
    seed = tmp_path / "seed.db"
    _add(seed, "known before")
    bucket("index", "write", remote, seed, "--over", "0")
    both_read = threading.Barrier(2)
    refusals: list[str] = []
    failures: list[BaseException] = []

    def writer(name: str) -> None:
        try:
            index = tmp_path / f"{name}.db"
            first = True
            for _ in range(20):
                version = bucket("index", "read", remote, index)["version"]
                if first:
                    both_read.wait(timeout=60)  # both start from the same version
                    first = False
                _add(index, f"told to {name}")
                written = bucket("index", "write", remote, index, "--over", str(version))
                if not written["refused"]:
                    return
                refusals.append(name)  # read again, and make the change over what's there now
            raise AssertionError(f"{name} never wrote")
        except BaseException as exc:  # carried to the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("phone", "laptop")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures
    assert refusals, "one writer should have been refused"

    final = tmp_path / "final.db"
    bucket("index", "read", remote, final)
    with sqlite3.connect(final) as db:
        facts = sorted(row[0] for row in db.execute("select fact from facts"))
    db.close()
    assert facts == ["known before", "told to laptop", "told to phone"]
