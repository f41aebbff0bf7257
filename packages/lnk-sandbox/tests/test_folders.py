"""Opening the folders a sandbox is shown: once, name by name, following no link, checked as opened."""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

import pytest
from helpers import Link
from lnk_sandbox.folders import Folders
from lnk_sandbox.policy import Context, build
from lnk_sandbox.request import Request
from lnk_sandbox.standing import Standing

from link_plugin.errors import LinkError
from link_plugin.sandbox import SandboxRequest


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "root" / "a" / "b").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("outside\n")
    return tmp_path


def test_a_folder_is_opened_by_its_names(tree: Path) -> None:
    folders = Folders()
    opened = folders.beneath(tree / "root", ["a", "b"])
    assert opened.path == tree / "root" / "a" / "b"
    assert os.fstat(opened.fd).st_ino == (tree / "root" / "a" / "b").stat().st_ino
    folders.close()
    with pytest.raises(OSError):
        os.fstat(opened.fd)


@pytest.mark.parametrize("at", ["a", "b"])
def test_a_link_at_any_step_is_refused(tree: Path, at: str) -> None:
    target = tree / "root" / "a" / "b" if at == "b" else tree / "root" / "a"
    target.rename(tree / "moved")
    target.symlink_to(tree / "outside")
    with pytest.raises(LinkError, match=f"symbolic link at {target}"):
        Folders().beneath(tree / "root", ["a", "b"])


def test_a_link_to_a_folder_inside_is_refused_too(tree: Path) -> None:
    (tree / "root" / "c").symlink_to("a")
    with pytest.raises(LinkError, match="symbolic link"):
        Folders().beneath(tree / "root", ["c", "b"])


@pytest.mark.parametrize("names", [["a", ".."], ["..", "outside"], ["a", "."], ["a", ""], ["a/b"]])
def test_dotdot_and_odd_names_are_refused(tree: Path, names: list[str]) -> None:
    with pytest.raises(LinkError, match="'..'"):
        Folders().beneath(tree / "root", names)


def test_a_file_where_a_folder_should_be_is_refused(tree: Path) -> None:
    (tree / "root" / "f").write_text("a file")
    with pytest.raises(LinkError, match="isn't a folder"):
        Folders().beneath(tree / "root", ["f"])


def test_a_missing_folder_is_refused_unless_made(tree: Path) -> None:
    with pytest.raises(LinkError, match="doesn't exist"):
        Folders().beneath(tree / "root", ["a", "new", "deeper"])
    opened = Folders().beneath(tree / "root", ["a", "new", "deeper"], make=True)
    assert opened.path.is_dir() and opened.path == tree / "root" / "a" / "new" / "deeper"


def test_making_never_goes_through_a_link(tree: Path) -> None:
    (tree / "root" / "a" / "b").rmdir()
    (tree / "root" / "a" / "b").symlink_to(tree / "outside")
    with pytest.raises(LinkError, match="symbolic link"):
        Folders().beneath(tree / "root", ["a", "b", "made"], make=True)
    assert not (tree / "outside" / "made").exists()


def test_someone_elses_folder_is_refused(tree: Path) -> None:
    os.chown(tree / "root" / "a", os.geteuid() + 4242, -1)
    with pytest.raises(LinkError, match="belongs to another user"):
        Folders().beneath(tree / "root", ["a"])


def test_a_path_outside_follows_its_links_once_and_opens_the_real_folder(tree: Path) -> None:
    (tree / "venv-lib").symlink_to(tree / "outside")
    opened = Folders().resolved(tree / "venv-lib")
    assert opened.path == tree / "outside"
    assert os.fstat(opened.fd).st_ino == (tree / "outside").stat().st_ino
    with pytest.raises(LinkError, match="doesn't exist"):
        Folders().resolved(tree / "nowhere")


def test_a_folder_swapped_for_a_link_meanwhile_is_the_folder_or_refused(tree: Path) -> None:
    """Another process exchanges `a/b` with a link to the outside as fast as it can: every open is
    the real `b` or Link's error, never the outside and never an OSError."""
    real = (tree / "root" / "a" / "b").stat().st_ino
    (tree / "root" / "a" / "link").symlink_to(tree / "outside")
    exchange = ctypes.CDLL(None, use_errno=True).renameat2
    stop = threading.Event()

    def swap() -> None:
        parent = os.open(tree / "root" / "a", os.O_PATH)
        while not stop.is_set():
            exchange(parent, b"b", parent, b"link", 2)
        os.close(parent)

    swapper = threading.Thread(target=swap)
    swapper.start()
    opened = refused = 0
    try:
        for _ in range(3000):
            folders = Folders()
            try:
                found = folders.beneath(tree / "root", ["a", "b"])
            except LinkError:
                refused += 1
            else:
                assert os.fstat(found.fd).st_ino == real
                opened += 1
            folders.close()
    finally:
        stop.set()
        swapper.join()
    assert opened and refused


def test_a_failed_policy_leaves_nothing_open(link: Link) -> None:
    layout = link.layout
    context = Context(layout, Standing.of(layout, "main", "mini"), {})
    before = set(os.listdir("/proc/self/fd"))
    request = SandboxRequest(agent="main", harness="mini", argv=["true"], reads=[str(link.root / "missing")])
    with pytest.raises(LinkError, match="doesn't exist"):
        build(Request.of(request), context)
    assert set(os.listdir("/proc/self/fd")) == before


def test_a_policy_holds_each_folder_by_its_descriptor_until_closed(link: Link) -> None:
    layout = link.layout
    context = Context(layout, Standing.of(layout, "main", "mini"), {})
    with build(Request.of(SandboxRequest(agent="main", harness="mini", argv=["true"])), context) as policy:
        held = policy.fds()
        assert held and all(bind.fd is not None for bind in policy.binds if bind.access != "hide")
        for bind in [*policy.binds, *policy.interpreter]:
            if bind.fd is not None:
                assert os.readlink(f"/proc/self/fd/{bind.fd}") == str(bind.path)
    for fd in held:
        with pytest.raises(OSError):
            os.fstat(fd)
