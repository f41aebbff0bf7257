"""Every scan finishes whatever the folder holds: depth, loops, FIFOs, sockets, devices, folders and
files it may not read, names that aren't UTF-8, files changing or vanishing while it runs. What goes
wrong in one place is said for that place (status, skipped), and the rest is indexed."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import MakeMemory, write
from lnk_link_memory import indexer, prepare
from lnk_link_memory.folder import Folder, Found, Skipped
from lnk_link_memory.limits import FOLDER_DEPTH
from lnk_link_memory.memory import Config, Memory
from lnk_link_memory.models import choose
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from link_plugin.layout import AgentFolder

CHILD = Path(__file__).parent / "scan_child.py"
Nest = Callable[[Path, int], Path]


@pytest.fixture
def nest() -> Iterator[Nest]:
    """Make a folder n levels deep under a root (d/d/d/...). Removed after the test a level at a
    time, each moved up in turn: a recursive removal (pytest's own) fails on it as a recursive walk did."""
    made: list[Path] = []

    def make(root: Path, levels: int) -> Path:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for _ in range(levels):
                os.mkdir("d", dir_fd=fd)
                child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = child
        finally:
            os.close(fd)
        made.append(root)
        return root.joinpath(*["d"] * min(levels, 10))

    yield make
    for root in made:
        top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            while "d" in os.listdir(top):
                child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=top)
                try:
                    for name in os.listdir(child):
                        if name == "d":
                            os.rename("d", "next", src_dir_fd=child, dst_dir_fd=top)
                        else:
                            os.unlink(name, dir_fd=child)
                finally:
                    os.close(child)
                os.rmdir("d", dir_fd=top)
                if "next" in os.listdir(top):
                    os.rename("next", "d", src_dir_fd=top, dst_dir_fd=top)
        finally:
            os.close(top)


def test_a_folder_1200_levels_deep_leaves_the_rest_indexed(tmp_path: Path, nest: Nest) -> None:
    """The scan finishes: `docs/zzz.md`, after the deep folder in path order, is found over MCP."""
    folder, state = tmp_path / "vault", tmp_path / "state"
    write(folder / "docs" / "zzz.md", "# Last\n\nthe narwhal surfaced\n")
    (folder / "docs" / "deep").mkdir()
    shallow = nest(folder / "docs" / "deep", 1200)
    write(shallow / "near.md", "# Near\n\nthe walrus ten folders down\n")
    server = StdioServerParameters(
        command="lnk-link-memory",
        args=["serve", "--folder", str(folder), "--state", str(state), "--embeddings", "none"],
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
    )

    async def scenario() -> tuple[list[str], list[str], dict[str, object]]:
        async with Client(server, read_timeout_seconds=60) as client:
            for _ in range(200):
                status = json.loads((await client.read_resource("memory://status")).contents[0].text)  # type: ignore[union-attr]
                if status["last_scan"]:
                    break
                await asyncio.sleep(0.1)
            found = await client.call_tool("search", {"query": "narwhal"})
            near = await client.call_tool("search", {"query": "walrus"})
            paths = [hit["path"] for hit in (found.structured_content or {})["results"]]
            return paths, [hit["path"] for hit in (near.structured_content or {})["results"]], status

    paths, near, status = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert paths == ["docs/zzz.md"]
    assert near == ["docs/deep/" + "d/" * 10 + "near.md"]
    assert status["last_scan"] is not None and status["error"] is None
    (deep,) = [s for s in status["skipped"] if "folders deep" in s["why"]]  # type: ignore[attr-defined]
    assert deep["path"].startswith("docs/deep/d/d/") and deep["path"].count("/") == FOLDER_DEPTH


def test_removals_are_recorded_beside_a_deep_folder(agent: AgentFolder, memory_of: MakeMemory, nest: Nest) -> None:
    write(agent.memory / "a.md", "# A\n\nthe puffin\n")
    write(agent.memory / "z.md", "# Z\n\nthe gannet\n")
    (agent.memory / "deep").mkdir()
    nest(agent.memory / "deep", FOLDER_DEPTH + 50)
    memory = memory_of(agent)
    memory.scan()
    (agent.memory / "z.md").unlink()
    memory.scan()
    assert [(e.path, e.state) for e in memory.changes(since="2000-01-01").entries] == [("memory/z.md", "removed")]
    assert memory.status().last_scan is not None


def test_fifos_sockets_and_devices_are_never_opened(agent: AgentFolder, memory_of: MakeMemory) -> None:
    write(agent.memory / "real.md", "# Real\n\nthe kittiwake\n")
    os.mkfifo(agent.memory / "pipe.md")  # opened for reading, it would wait for a writer forever
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(agent.memory / "socket.md"))
    device = agent.memory / "device.md"
    if os.geteuid() == 0:
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero: endless if read
    memory = memory_of(agent)
    try:
        memory.scan()
    finally:
        listener.close()
    assert [hit.path for hit in memory.search("kittiwake").results] == ["memory/real.md"]
    skipped = {s.path: s.why for s in memory.status().skipped}
    names = ["memory/pipe.md", "memory/socket.md"] + (["memory/device.md"] if device.exists() else [])
    assert all("never opened" in skipped[name] for name in names)


def _unprivileged(argv: list[str]) -> list[str]:
    """Root reads any file: the child runs without the capabilities that let it, as a user would."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv is needed to scan as root without its read-anything capabilities")
    return [setpriv, "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", *argv]


def _scan_in_child(folder: Path, state: Path, wrap: list[str] | None = None) -> dict[str, object]:
    argv = [*(wrap or []), sys.executable, str(CHILD), str(folder), str(state)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_folders_and_files_it_may_not_read(tmp_path: Path) -> None:
    folder, state = tmp_path / "vault", tmp_path / "state"
    write(folder / "open.md", "# Open\n\nreadable\n")
    write(folder / "private" / "diary.md", "# Diary\n\nkept before it was locked\n")
    write(folder / "zzz.md", "# Last\n\nafter the locked folder\n")
    locked = write(folder / "locked.md", "# Locked\n\nnobody reads this\n")
    assert _scan_in_child(folder, state, _unprivileged([]))["paths"] == [
        "locked.md",
        "open.md",
        "private/diary.md",
        "zzz.md",
    ]
    os.chmod(folder / "private", 0)
    locked.write_text("# Locked\n\nchanged, and now unreadable\n")
    os.chmod(locked, 0)
    try:
        seen = _scan_in_child(folder, state, _unprivileged([]))
    finally:
        os.chmod(folder / "private", 0o755)
    skipped = dict(seen["skipped"])  # type: ignore[call-overload]
    assert "can't read (Permission denied)" in skipped["private"]
    assert "Permission denied" in skipped["locked.md"]
    # The locked folder's document may well be there still: kept, not reported removed.
    assert seen["paths"] == ["open.md", "private/diary.md", "zzz.md"] and seen["last_scan"]


def test_a_folder_mounted_inside_itself_is_read_once(tmp_path: Path) -> None:
    """A bind mount of a folder into its own child (made in a mount namespace of the child's own)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("bwrap makes the mount namespace")
    folder, state = tmp_path / "vault", tmp_path / "state"
    write(folder / "a.md", "# A\n\nthe tern\n")
    (folder / "sub" / "loop").mkdir(parents=True)
    write(folder / "sub" / "b.md", "# B\n\nthe skua\n")
    wrap = [bwrap, "--dev-bind", "/", "/", "--bind", str(folder), str(folder / "sub" / "loop"), "--"]
    seen = _scan_in_child(folder, state, wrap)
    assert seen["paths"] == ["a.md", "sub/b.md"]
    assert "read once" in dict(seen["skipped"])["sub/loop"]  # type: ignore[call-overload]


def test_names_that_are_not_utf8(agent: AgentFolder, memory_of: MakeMemory) -> None:
    memory_dir = os.fsencode(agent.memory)
    with open(os.path.join(memory_dir, b"caf\xe9.md"), "w") as stream:
        stream.write("# Latin-1 name\n\nthe cormorant\n")
    os.mkdir(os.path.join(memory_dir, b"dir\xfe"))
    with open(os.path.join(memory_dir, b"dir\xfe", b"inside.md"), "w") as stream:
        stream.write("# Inside\n\nthe cormorant again\n")
    write(agent.memory / "good.md", "# Good\n\nthe cormorant, named in UTF-8\n")
    memory = memory_of(agent)
    memory.scan()
    assert [hit.path for hit in memory.search("cormorant").results] == ["memory/good.md"]
    status = memory.status()
    skipped = {s.path: s.why for s in status.skipped}
    assert "UTF-8" in skipped["memory/caf\\xe9.md"] and "UTF-8" in skipped["memory/dir\\xfe"]
    assert json.loads(status.model_dump_json())["documents"] == 1


def test_files_changing_and_vanishing_while_the_scan_runs(
    agent: AgentFolder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "b", "c", "d"):
        write(agent.memory / f"{name}.md", f"# {name}\n\nthe shearwater {name}\n")
    write(agent.memory / "sub" / "e.md", "# e\n\nthe shearwater e\n")
    walk = indexer.walk
    meddled: set[str] = set()

    def meddling(folder: object) -> Iterator[Found | Skipped]:
        """The first scan (the memory's own, or the test's) meets a folder changing under it."""
        for item in walk(folder):  # type: ignore[arg-type]
            if item.path in meddled:
                pass
            elif item.path == "memory/a.md":
                meddled.add(item.path)
                # After the folder was listed: a file gone, a folder gone, a file now a FIFO.
                (agent.memory / "b.md").unlink()
                shutil.rmtree(agent.memory / "sub")
                (agent.memory / "c.md").unlink()
                os.mkfifo(agent.memory / "c.md")
            elif item.path == "memory/d.md":
                meddled.add(item.path)
                # Found as a file, a FIFO by the time it is read: opened without waiting, then refused.
                (agent.memory / "d.md").unlink()
                os.mkfifo(agent.memory / "d.md")
            yield item

    monkeypatch.setattr(indexer, "walk", meddling)
    # Scanned once, by the test alone: no scanning thread of the memory's own.
    memory = Memory(Config(Folder.agent(agent.root, None), tmp_path / "state", None, 0, choose("none", None), "x"))
    memory.store.open()
    memory.scan()
    assert [hit.path for hit in memory.search("shearwater").results] == ["memory/a.md"]
    skipped = {s.path: s.why for s in memory.status().skipped}
    assert set(skipped) == {"memory/c.md", "memory/d.md"}
    assert "never opened" in skipped["memory/c.md"] and "not a document" in skipped["memory/d.md"]
    assert memory.status().last_scan is not None
    memory.close()


def test_a_document_that_fails_to_index_is_said_for_itself(
    agent: AgentFolder, memory_of: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(agent.memory / "bad.md", "# Bad\n\nthe fulmar poisons the chunker\n")
    write(agent.memory / "good.md", "# Good\n\nthe fulmar\n")
    chunk = prepare.chunk

    def failing(body: str, *args: int) -> object:
        if "poisons" in body:
            raise ValueError("a chunker bug")
        return chunk(body, *args)

    monkeypatch.setattr(prepare, "chunk", failing)
    memory = memory_of(agent)
    memory.scan()
    assert [hit.path for hit in memory.search("fulmar").results] == ["memory/good.md"]
    skipped = {s.path: s.why for s in memory.status().skipped}
    assert skipped["memory/bad.md"] == "couldn't be indexed (ValueError: a chunker bug)"
