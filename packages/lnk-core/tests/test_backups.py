"""Backups to a bucket (rclone's local-folder remote here) and restores from one, through `lnk`.

The agent's harness is lnk-mini, whose state is its whole home; the bucket is a plain folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from world import World

from link_plugin.keys import KeyStore


@pytest.fixture
def work(world: World) -> Path:
    """Agent `work`, with a model key, lnk-mini as its harness, memory, files, a conversation and
    its harness's state; its bucket a folder of the world's."""
    world.lnk("agent", "keys", "set", "openai", "work", "--stdin", input=world.key)
    agent = world.agent("work")
    agent.with_settings(harness="mini", memory="testmemory").save()
    (agent.folder.home / "memory" / "notes.md").write_text("The boat is blue.\n")
    (agent.folder.chats / "telegram-1").mkdir(parents=True)
    (agent.folder.chats / "telegram-1" / "conversation.md").write_text("owner: my boat is blue\n")
    home = agent.folder.harness_home("mini")
    home.mkdir(parents=True)
    (home / "session.json").write_text('{"turn": 3}')
    index = agent.folder.memory_state("testmemory")
    index.mkdir(parents=True)
    (index / "index.db").write_bytes(b"an index of the boat" * 1000)
    bucket = world.root / "bucket"
    world.lnk("bucket", "set", "work", str(bucket))
    return bucket


def _everything(folder: Path) -> str:
    return "\n".join(p.read_bytes().decode(errors="replace") for p in folder.rglob("*") if p.is_file())


def test_backup_delete_restore_brings_the_agent_back_without_its_keys(world: World, work: Path) -> None:
    agent = world.agent("work")
    said = world.lnk("agent", "backup", "work").stderr
    assert "backed up" in said
    assert (work / "files" / "memory" / "notes.md").read_text() == "The boat is blue.\n"
    assert (work / "files" / ".lnk-backup" / "mini.tar").is_file()
    assert (work / "lnk-agent.json").is_file()
    assert list((work / "memory" / "testmemory" / "manifests").glob("*.json"))
    assert world.key not in _everything(work), "a key never goes into a bucket"
    assert not list(work.rglob("settings.toml")) and not list(work.rglob("keys.json"))

    deleted = world.lnk("agent", "delete", "work", "--yes", "--files")
    assert work.is_dir(), "deleting an agent keeps its bucket"
    assert "Its backups stay in" in deleted.stderr
    world.lnk("agent", "restore", "work", "--from", str(work))

    back = world.agent("work")
    assert back.id == agent.id and back.settings.harness == "mini" and back.settings.memory == "testmemory"
    assert back.settings.bucket == str(work)
    assert (back.folder.home / "memory" / "notes.md").read_text() == "The boat is blue.\n"
    assert (back.folder.chats / "telegram-1" / "conversation.md").read_text() == "owner: my boat is blue\n"
    assert (back.folder.harness_home("mini") / "session.json").read_text() == '{"turn": 3}'
    assert (back.folder.memory_state("testmemory") / "index.db").read_bytes() == b"an index of the boat" * 1000
    assert KeyStore(back.config.keys).names() == [], "keys are asked again"


def test_what_is_scheduled_comes_back_and_a_cancelled_schedule_doesnt(world: World, work: Path) -> None:
    due = world.agent("work").folder.scheduler / "due"
    due.mkdir(parents=True)
    for name, title in (("yearly", "the yearly review"), ("weekly", "the weekly plan")):
        (due / f"{name}.json").write_text(json.dumps({**SCHEDULE, "id": name, "title": title}))
    world.lnk("agent", "backup", "work")
    (due / "weekly.json").unlink()  # cancelled since: the next backup says so
    world.lnk("agent", "backup", "work")
    world.lnk("agent", "delete", "work", "--yes", "--files")
    world.lnk("agent", "restore", "work", "--from", str(work))
    listed = json.loads(world.lnk("agent", "schedules", "work", "--json").stdout)
    assert [(item["id"], item["title"]) for item in listed] == [("yearly", "the yearly review")]


SCHEDULE = {
    "kind": "schedule",
    "text": "Time for the review.",
    "sender": "schedule:review",
    "thread": "schedule:review",
    "at": "2099-01-02T09:00:00+00:00",
    "start": "2099-01-02T09:00:00+00:00",
    "rule": "FREQ=YEARLY",
}
"""What Link Scheduler keeps for a schedule far ahead (its id and title added)."""


def test_a_second_backup_sends_only_what_changed_and_deletes_nothing(world: World, work: Path) -> None:
    agent = world.agent("work")
    (agent.folder.home / "work" / "draft.md").write_text("a draft")
    world.lnk("agent", "backup", "work")
    (agent.folder.home / "work" / "draft.md").unlink()
    (agent.folder.home / "memory" / "notes.md").write_text("The boat is blue.\nThe car is red.\n")
    said = world.lnk("agent", "backup", "work").stderr
    # The notes alone: the state's archive was written again, the same bytes, so it isn't sent.
    assert "1 file of its files folder changed" in said
    assert (work / "files" / "work" / "draft.md").read_text() == "a draft"
    assert "The car is red." in (work / "files" / "memory" / "notes.md").read_text()
    # Memory's index didn't change: the bucket holds the one version the first backup wrote.
    assert [p.name for p in (work / "memory" / "testmemory" / "manifests").glob("*.json")] == ["000000000001.json"]


def test_going_back_replaces_the_harness_state_wholly_and_nothing_else(world: World, work: Path) -> None:
    agent = world.agent("work")
    world.lnk("agent", "backup", "work")
    (agent.folder.chats / "telegram-2").mkdir()
    (agent.folder.chats / "telegram-2" / "conversation.md").write_text("what went wrong")
    (agent.folder.harness_home("mini") / "session.json").write_text('{"turn": 99}')
    (agent.folder.home / "work" / "new.md").write_text("written since")

    world.lnk("agent", "restore", "work")
    assert not (agent.folder.chats / "telegram-2").exists()
    assert (agent.folder.chats / "telegram-1" / "conversation.md").read_text() == "owner: my boat is blue\n"
    assert (agent.folder.harness_home("mini") / "session.json").read_text() == '{"turn": 3}'
    assert (agent.folder.home / "work" / "new.md").read_text() == "written since"
    assert KeyStore(agent.config.keys).names() == ["openai"], "its keys and settings stay as they were"
    assert world.agent("work").settings.bucket == str(work)


def test_a_truncated_archive_leaves_the_state_as_it_was(world: World, work: Path) -> None:
    agent = world.agent("work")
    world.lnk("agent", "backup", "work")
    archive = work / "files" / ".lnk-backup" / "mini.tar"
    archive.write_bytes(archive.read_bytes()[: archive.stat().st_size // 3])
    (agent.folder.harness_home("mini") / "session.json").write_text('{"turn": 4}')

    refused = world.lnk("agent", "restore", "work", ok=False)
    assert "can't be unpacked" in refused.stderr and "the state is as it was" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert (agent.folder.harness_home("mini") / "session.json").read_text() == '{"turn": 4}'
    assert (agent.folder.chats / "telegram-1" / "conversation.md").read_text() == "owner: my boat is blue\n"
    assert not list(agent.folder.root.glob(".lnk-restore-*"))


def test_an_archive_cut_at_any_block_is_refused(tmp_path: Path) -> None:
    """tarfile reads a tar cut at a member's header as one that ended there: the archive is whole
    only when it goes on to its end, wherever it was cut."""
    import io
    import tarfile

    from link_plugin.errors import LinkError
    from lnk import harness_state

    whole = tmp_path / "whole.tar"
    with tarfile.open(whole, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in (("chats/a/conversation.md", b"x" * 700), ("home/session.json", b"{}")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    data = whole.read_bytes()
    harness_state._unpack(whole, tmp_path / "in-full")
    ends = data.rstrip(b"\0")
    cut = tmp_path / "cut.tar"
    for size in range(0, len(ends) + tarfile.BLOCKSIZE, tarfile.BLOCKSIZE // 2):
        cut.write_bytes(data[:size])
        with pytest.raises(LinkError, match="can't be unpacked"):
            harness_state._unpack(cut, tmp_path / f"cut-{size}")


def test_an_archive_reaching_outside_the_state_is_refused(world: World, work: Path) -> None:
    import io
    import tarfile

    agent = world.agent("work")
    world.lnk("agent", "backup", "work")
    archive = work / "files" / ".lnk-backup" / "mini.tar"
    with tarfile.open(archive, "w") as tar:
        info = tarfile.TarInfo("chats/../../../escaped.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    refused = world.lnk("agent", "restore", "work", ok=False)
    assert "would land outside the state" in refused.stderr
    assert not (agent.folder.root.parent / "escaped.txt").exists()
    assert (agent.folder.chats / "telegram-1" / "conversation.md").is_file()


def test_bad_input_is_a_clear_error(world: World, work: Path) -> None:
    world.lnk("agent", "keys", "set", "openai", "other", "--stdin", input=world.key)
    no_bucket = world.lnk("agent", "backup", "other", ok=False)
    assert "has no bucket" in no_bucket.stderr and "lnk bucket set other" in no_bucket.stderr

    nowhere = world.lnk("agent", "restore", "lost", ok=False)
    assert "--from" in nowhere.stderr

    empty = world.root / "empty"
    empty.mkdir()
    none = world.lnk("agent", "restore", "lost", "--from", str(empty), ok=False)
    assert "holds no backup" in none.stderr and not world.layout.agent_config("lost").root.exists()

    world.lnk("agent", "backup", "work")
    other = world.lnk("agent", "restore", "other", "--from", str(work), ok=False)
    assert "another agent" in other.stderr
    twice = world.lnk("agent", "restore", "copy", "--from", str(work), ok=False)
    assert "already here, as work" in twice.stderr

    unknown = world.lnk("bucket", "set", "work", "nowhere:bucket")
    assert "nowhere:bucket" in unknown.stderr
    failed = world.lnk("agent", "backup", "work", ok=False)
    said = " ".join(failed.stderr.split())
    assert "didn't find section in config file" in said and "lnk bucket config" in said
    for done in (no_bucket, nowhere, none, other, twice, failed):
        assert "Traceback" not in done.stderr


def test_bucket_delete_deletes_the_backups(world: World, work: Path) -> None:
    world.lnk("agent", "backup", "work")
    assert world.lnk("bucket", "show", "work").stdout.strip() == str(work)
    asks = world.lnk("bucket", "delete", "work", ok=False)
    assert "--yes" in asks.stderr and work.exists()
    world.lnk("bucket", "delete", "work", "--yes")
    assert not work.exists()
    assert world.agent("work").settings.bucket is None


def test_bucket_config_keeps_remotes_in_links_own_settings(world: World) -> None:
    world.lnk("bucket", "config", "create", "dav", "webdav", "url=http://127.0.0.1:9", "vendor=other")
    kept = (world.layout.config / "rclone.conf").read_text()
    assert "[dav]" in kept and "url = http://127.0.0.1:9" in kept
    assert not (Path(world.env["HOME"]) / ".config" / "rclone").exists()
