"""What a sandbox is built from, checked once for each change: every change is seen by the next
run, a broken file fails every run, and no sandbox can read or change what is kept."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from helpers import Link
from lnk_sandbox import standing
from lnk_sandbox.standing import KEPT, Standing

from link_plugin.errors import LinkError


def kept(link: Link) -> dict[str, dict[str, object]]:
    files: dict[str, dict[str, object]] = json.loads((link.layout.config / KEPT).read_text())["files"]
    return files


def test_the_files_are_checked_once_and_kept_with_their_text(link: Link) -> None:
    link.grants("main", 'hosts = ["Example.COM"]\n')
    first = Standing.of(link.layout, "main", "mini")
    assert first.hosts == ("example.com",) and first.id == "mainagent001"
    entry = kept(link)[str(link.layout.agent_config("main").sandbox)]
    assert entry["text"] == 'hosts = ["Example.COM"]\n' and entry["kind"] == "agent"
    assert Standing.of(link.layout, "main", "mini") == first


def test_a_change_is_seen_by_the_next_run_even_at_the_same_size_and_time(link: Link) -> None:
    path = link.grants("main", 'deny = ["network"]\n')
    assert "network" not in Standing.of(link.layout, "main", "mini").permissions
    before = os.stat(path)
    path.write_text('allow = ["lan"]   \n')  # as long as before, and given the same times below
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    now = Standing.of(link.layout, "main", "mini")
    assert "network" in now.permissions and "lan" in now.permissions
    link.harness_grants("mini", 'allow = ["read-home"]\n')
    assert Standing.of(link.layout, "main", "mini").harness_allow == ("read-home",)
    link.machine("unsandboxed = false\n")
    assert Standing.of(link.layout, "main", "mini").forbids_unsandboxed
    link.layout.machine.unlink()
    assert not Standing.of(link.layout, "main", "mini").forbids_unsandboxed


def test_a_deleted_agents_files_leave_what_is_kept(link: Link) -> None:
    link.agent("other", "otheragent01")
    link.grants("other", 'hosts = ["example.com"]\n')
    Standing.of(link.layout, "other", "mini")
    folder = link.layout.agent_config("other").settings.parent
    assert any(path.startswith(str(folder)) for path in kept(link))
    shutil.rmtree(folder)  # as `lnk agent delete` does
    Standing.of(link.layout, "main", "mini")
    assert not any(path.startswith(str(folder)) for path in kept(link))


def test_a_broken_file_fails_every_run_and_is_never_kept(link: Link) -> None:
    path = link.grants("main", 'allow = ["read-everything"]\n')
    for _ in range(2):
        with pytest.raises(LinkError, match="read-everything"):
            Standing.of(link.layout, "main", "mini")
    assert str(path) not in kept(link)
    path.write_text("allow = [\n")
    with pytest.raises(LinkError, match=str(path)):
        Standing.of(link.layout, "main", "mini")


def test_what_another_release_kept_is_checked_again(link: Link) -> None:
    Standing.of(link.layout, "main", "mini")
    path = link.layout.config / KEPT
    data = json.loads(path.read_text())
    for entry in data["files"].values():
        if entry["kind"] == "agent":
            entry["view"]["permissions"] = ["lan", "network"]
    path.write_text(json.dumps({**data, "edition": "0.0.1/0.0.1"}))
    assert "lan" not in Standing.of(link.layout, "main", "mini").permissions


def test_an_unknown_agent_or_a_name_that_is_a_path_is_refused(link: Link) -> None:
    with pytest.raises(LinkError, match="no agent named 'nobody'"):
        Standing.of(link.layout, "nobody", None)
    for name in ("../main", "main/../other", ""):
        with pytest.raises(LinkError, match="is not an agent's name"):
            Standing.of(link.layout, name, None)
    with pytest.raises(LinkError, match="is not a harness's name"):
        Standing.of(link.layout, "main", "../../etc")
    assert standing.owner_of(link.layout, "../other") is None


def test_no_sandbox_reads_or_writes_what_is_kept(link: Link) -> None:
    Standing.of(link.layout, "main", "mini")
    path = link.layout.config / KEPT
    ran = link.sh(f"cat {path}; echo changed > {path}; ls -a {link.layout.config}")
    assert "mainagent001" not in ran.out and KEPT not in ran.out
    assert "mainagent001" in path.read_text()
