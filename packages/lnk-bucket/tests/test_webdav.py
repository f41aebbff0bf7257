"""A bucket over a real network protocol: WebDAV, as `rclone serve webdav` speaks it on the loopback,
reached through a remote of Link's rclone settings."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Bucket
from lnk_bucket.rclone import program


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def served(tmp_path: Path, config: Path) -> Iterator[Path]:
    """A WebDAV server over a folder, and the remote `dav` reaching it in Link's rclone.conf."""
    folder = tmp_path / "served"
    folder.mkdir()
    port = _free_port()
    server = subprocess.Popen(
        [str(program()), "serve", "webdav", str(folder), "--addr", f"127.0.0.1:{port}", "--config", "/dev/null"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("rclone serve webdav didn't start") from None
                time.sleep(0.05)
        (config / "rclone.conf").write_text(f"[dav]\ntype = webdav\nurl = http://127.0.0.1:{port}\nvendor = other\n")
        yield folder
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_files_and_the_index_over_webdav(bucket: Bucket, served: Path, tmp_path: Path) -> None:
    home = tmp_path / "Home"
    (home / "memory").mkdir(parents=True)
    (home / "memory" / "notes.md").write_text("the boat is blue\n")
    assert bucket("push", home, "dav:work/files") == {"copied": 1}
    assert (served / "work" / "files" / "memory" / "notes.md").read_text() == "the boat is blue\n"
    assert bucket("push", home, "dav:work/files") == {"copied": 0}

    index = tmp_path / "index.db"
    index.write_bytes(b"segment " * 200_000)
    assert bucket("index", "write", "dav:work/memory/link", index, "--over", "0")["version"] == 1
    assert bucket("index", "write", "dav:work/memory/link", index, "--over", "0")["refused"] is True
    back = tmp_path / "back.db"
    assert bucket("index", "read", "dav:work/memory/link", back)["version"] == 1
    assert back.read_bytes() == index.read_bytes()

    assert bucket("delete", "dav:work") == {"deleted": True}
    assert not (served / "work").exists()
