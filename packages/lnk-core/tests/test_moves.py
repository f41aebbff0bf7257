"""Moving an agent between two homes: `lnk agent send | lnk agent receive | lnk agent sent`.

Each world is a machine of its own (its LNK_CONFIG_DIR and LNK_AGENTS_DIR); the stream goes
through a pipe between their processes, as it would through ssh.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from world import PYTHON, World

from link_conformance import Reply
from link_plugin.errors import LinkError
from link_plugin.files import load_toml, save_toml
from lnk.moves import MovedNote, keep_for, receive, sweep_kept
from lnk.movestream import END, MANIFEST, MoveError, Reader, read_header, read_stream
from lnk.trees import relative_path


@pytest.fixture
def there() -> Iterator[World]:
    made = World()
    try:
        yield made
    finally:
        made.close()


def _pipe(here: World, there: World, name: str = "work", *receive_args: str) -> tuple[str, str, int]:
    """send here | receive there: receive's stdout (the receipt), both sides' stderr, receive's exit."""
    sender = subprocess.Popen(
        [PYTHON, "-m", "lnk", "agent", "send", name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=here.env
    )
    assert sender.stdout is not None
    receiver = subprocess.run(
        [PYTHON, "-m", "lnk", "agent", "receive", "--no-sandbox", *receive_args],
        stdin=sender.stdout,
        capture_output=True,
        env=there.env,
        timeout=180,
    )
    sender.stdout.close()
    _, sent_err = sender.communicate(timeout=60)
    return receiver.stdout.decode(), sent_err.decode() + receiver.stderr.decode(), receiver.returncode


def _sent(here: World, receipt: str, name: str = "work", ok: bool = True) -> subprocess.CompletedProcess[str]:
    """`lnk agent sent` here, given receive's receipt (its stdout there) on stdin."""
    return here.lnk("agent", "sent", name, input=receipt, ok=ok)


def _snapshot(world: World) -> dict[str, bytes]:
    found = {}
    for root in (world.root / "config", world.root / "agents"):
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.is_symlink() and ".run" not in path.parts and "logs" not in path.parts:
                found[str(path.relative_to(world.root))] = path.read_bytes()
            elif path.is_dir():
                found[str(path.relative_to(world.root)) + "/"] = b""
    return found


YEARLY = {
    "id": "yearly",
    "kind": "schedule",
    "text": "Time for the yearly review.",
    "sender": "schedule:yearly",
    "thread": "schedule:yearly",
    "at": "2099-01-02T09:00:00+00:00",
    "start": "2099-01-02T09:00:00+00:00",
    "rule": "FREQ=YEARLY",
    "title": "the yearly review",
}
"""What Link Scheduler keeps for a schedule far ahead: it moves with the agent and fires nowhere meanwhile."""


def test_an_agent_moves_to_another_home_and_answers_there_with_its_id(world: World, there: World) -> None:
    world.start("work")
    agent = world.agent("work")
    home = agent.folder.home
    (home / "work" / "plan.md").write_text("the plan")
    (home / "work" / "same.md").write_text("one file, two names")
    os.link(home / "work" / "same.md", home / "work" / "again.md")  # a hard link: carried as a file
    (home / "work" / "outside").symlink_to("/etc")  # a symbolic link: never followed, never carried
    (agent.folder.chats / "terminal").mkdir(parents=True, exist_ok=True)
    (agent.folder.chats / "terminal" / "conversation.md").write_text("we spoke of the plan")
    (agent.config.root / "sandbox.toml").write_text('allow = ["lan", "developer-tools"]\ntcp = ["db.home:5432"]\n')
    due = agent.folder.scheduler / "due"
    due.mkdir(parents=True, exist_ok=True)
    (due / "yearly.json").write_text(json.dumps(YEARLY))  # a schedule goes with its agent, due there only
    there.env["LNK_UPSTREAM_OPENAI"] = world.provider.origin  # the key it carries is the one this provider takes
    # Something of the agent's there already, stale: its conversations go, its files stay.
    stale = there.layout.agent("work")
    (stale.home / "work").mkdir(parents=True)
    (stale.home / "work" / "mine.md").write_text("kept")
    (stale.chats / "old").mkdir(parents=True)

    receipt, said, code = _pipe(world, there)
    assert code == 0, said
    arrived = json.loads(receipt)
    assert arrived["id"] == agent.id and arrived["running"] is True and arrived["name"] == "work"
    status = json.loads(there.lnk("agent", "status", "work", "--json").stdout)
    assert status["running"] is True and status["id"] == agent.id

    moved = there.agent("work")
    assert (moved.folder.home / "work" / "plan.md").read_text() == "the plan"
    assert (moved.folder.home / "work" / "again.md").read_text() == "one file, two names"
    assert not (moved.folder.home / "work" / "again.md").is_symlink()
    assert not os.path.lexists(moved.folder.home / "work" / "outside")
    assert "never followed" in said
    assert (moved.folder.home / "work" / "mine.md").read_text() == "kept"  # files: added, never deleted
    assert not (moved.folder.chats / "old").exists()  # conversations: replaced wholly
    assert (moved.folder.chats / "terminal" / "conversation.md").read_text() == "we spoke of the plan"
    assert moved.keys.get("openai") == world.key
    listed = json.loads(there.lnk("agent", "schedules", "work", "--json").stdout)
    assert [(item["id"], item["title"]) for item in listed] == [("yearly", "the yearly review")]
    grants = (moved.config.root / "sandbox.toml").read_text()
    assert "developer-tools" in grants and "lan" not in grants and "5432" not in grants
    assert "Not taken from the stream: lan, tcp db.home:5432" in said

    world.provider.script(lambda _: Reply(text="Here now."))
    assert there.chat("work", "where are you?").strip() == "Here now."

    # The copy it left: stopped, and gone once the receipt says it answers there.
    assert json.loads(world.lnk("agent", "status", "work", "--json").stdout)["running"] is False
    left = _sent(world, receipt)
    assert "answers on" in left.stderr
    assert not agent.config.root.exists() and not agent.folder.root.exists()
    note = load_toml(world.layout.config / "agents" / ".moved" / f"{agent.id}.toml", MovedNote)
    assert note.files and (Path(note.files) / "work" / "plan.md").read_text() == "the plan"
    assert note.until is not None and note.until - note.at == timedelta(days=30)
    refused = world.lnk("agent", "start", "work", "--harness", "mini", "--no-sandbox", ok=False)
    assert f"work ({agent.id}) moved to" in refused.stderr and "Traceback" not in refused.stderr


def test_a_move_without_a_receipt_leaves_the_agent_here(world: World) -> None:
    world.start("work")
    world.lnk("agent", "stop", "work")
    done = _sent(world, "", ok=False)
    assert "stays here" in done.stderr
    other = json.dumps({"name": "work", "id": "abcdefabcdef", "machine": "box", "running": True})
    assert "not of work" in _sent(world, other, ok=False).stderr
    assert world.agent("work").config.settings.exists()
    world.start("work")


def test_an_agent_on_its_way_doesnt_start_here_until_the_move_is_off(world: World) -> None:
    world.start("work")
    sender = subprocess.run([PYTHON, "-m", "lnk", "agent", "send", "work"], capture_output=True, env=world.env)
    assert sender.returncode == 0 and sender.stdout, sender.stderr
    # It may answer where it went by now: a second poller of its bot here is refused, and says the way out.
    refused = " ".join(
        world.lnk("agent", "start", "work", "--harness", "mini", "--no-sandbox", ok=False).stderr.split()
    )
    assert "the move isn't finished" in refused and "lnk agent sent work --cancel" in refused
    assert "Traceback" not in refused
    assert "receive's receipt" in " ".join(_sent(world, "", ok=False).stderr.split())  # no receipt: still on its way
    assert world.lnk("agent", "start", "work", "--harness", "mini", "--no-sandbox", ok=False).returncode != 0

    cancelled = world.lnk("agent", "sent", "work", "--cancel")
    assert "stays here" in cancelled.stderr
    world.start("work")
    assert json.loads(world.lnk("agent", "status", "work", "--json").stdout)["running"] is True
    assert "nothing to cancel" in world.lnk("agent", "sent", "work", "--cancel").stderr


def test_a_send_cut_short_leaves_the_agent_free_to_start(world: World) -> None:
    world.start("work")
    (world.agent("work").folder.home / "work" / "big.bin").write_bytes(os.urandom(4 << 20))
    sender = subprocess.Popen(
        [PYTHON, "-m", "lnk", "agent", "send", "work"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=world.env
    )
    assert sender.stdout is not None
    sender.stdout.read(1000)
    sender.stdout.close()  # the other end went away mid-stream: no receive can have the agent
    sender.wait(timeout=60)
    assert sender.returncode == 1
    assert sender.stderr is not None
    said = sender.stderr.read().decode()
    assert "stopped reading before work was sent whole: nothing moved" in said, said
    assert "lnk agent start work" in said and "Traceback" not in said, said
    world.start("work")


# --- a stream that can't be taken changes nothing ---------------------------------------------


def _stream(members: list[tuple[str, bytes | None, str]], header: dict[str, object] | None = None) -> bytes:
    """A hand-made stream: (name, data or None for a folder, kind: file, dir, sym, link)."""
    out = io.BytesIO()
    out.write(json.dumps(header or {"lnk_move": 2, "grants": {}}).encode() + b"\n")
    with tarfile.open(fileobj=out, mode="w|") as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            if kind == "sym":
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
            elif kind == "link":
                info.type, info.linkname = tarfile.LNKTYPE, "files/a"
                tar.addfile(info)
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                assert data is not None
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@contextmanager
def _piped(data: bytes) -> Iterator[Reader]:
    """A reader of `data` coming down a pipe, as from lnk agent send."""
    read, write = os.pipe()

    def feed() -> None:
        try:
            with open(write, "wb") as out:
                out.write(data)
        except BrokenPipeError:
            pass  # the reader stopped at what it refused

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        yield Reader(read)
    finally:
        os.close(read)
        feeder.join()


@contextmanager
def _from_file(data: bytes, tmp_path: Path) -> Iterator[Reader]:
    """A reader of `data` in a file: a stream saved, then fed to receive (`< saved`)."""
    saved = tmp_path / "saved-stream"
    saved.write_bytes(data)
    fd = os.open(saved, os.O_RDONLY)
    try:
        yield Reader(fd)
    finally:
        os.close(fd)


MANIFEST_DATA = json.dumps(
    {
        "agent": {"name": "work", "id": "abcdefabcdef", "owner": "me@here"},
        "harness": "mini",
        "harness_state": ["."],
        "machine": "there",
        "lnk": "0",
    }
).encode()
SETTINGS = b'id = "abcdefabcdef"\nname = "work"\nowner = "me@here"\n'


def _good(*extra: tuple[str, bytes | None, str]) -> list[tuple[str, bytes | None, str]]:
    return [(MANIFEST, MANIFEST_DATA, "file"), ("settings/settings.toml", SETTINGS, "file"), *extra]


def _end(files: int, size: int) -> tuple[str, bytes, str]:
    return (END, json.dumps({"files": files, "bytes": size}).encode(), "file")


CASES = {
    "truncated mid-file": (
        _stream(_good(("files/a", b"x" * 5000, "file"), _end(2, 5000 + len(SETTINGS))))[:-6000],
        "cut short",
    ),
    "without its end": (_stream(_good(("files/a", b"x", "file"))), "cut short"),
    "a symbolic link": (_stream(_good(("files/a", None, "sym"), _end(1, len(SETTINGS)))), "symbolic link"),
    "a hard link member": (_stream(_good(("files/a", b"x", "file"), ("files/b", None, "link"))), "link to another"),
    "a path leaving the folder": (_stream(_good(("files/../../escape", b"x", "file"))), "leaves the folder"),
    "an absolute path": (_stream(_good(("/tmp/escape", b"x", "file"))), "leaves the folder"),
    "a newer manifest": (_stream([("lnk-move-3.json", MANIFEST_DATA, "file")]), "format 3"),
    "a newer first line": (_stream(_good(), {"lnk_move": 3, "grants": {}}), "format 3"),
    "not a stream": (b"hello\n", "not a move's stream"),
    "nothing": (b"", "Nothing came"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_stream_is_refused_and_nothing_here_changes(world: World, case: str) -> None:
    world.lnk("agent", "keys", "set", "openai", "home", "--stdin", input=world.key)
    (world.agent("home").folder.home / "work" / "a").write_text("mine")
    before = _snapshot(world)
    data, says = CASES[case]
    with pytest.raises(MoveError) as raised, _piped(data) as stream:
        receive(world.layout, stream, lambda _: None)
    assert says in raised.value.message
    assert _snapshot(world) == before
    assert not (world.root / "escape").exists() and not Path("/tmp/escape").exists()


def test_the_cli_refuses_a_mismatched_format_cleanly(world: World) -> None:
    done = subprocess.run(
        [PYTHON, "-m", "lnk", "agent", "receive"],
        input=CASES["a newer manifest"][0],
        capture_output=True,
        env=world.env,
    )
    assert done.returncode == 1
    said = done.stderr.decode()
    assert "format 3" in said and "this lnk receives format 2" in said and "Traceback" not in said


@pytest.mark.parametrize("through", ["pipe", "file"])
def test_the_stream_round_trips_what_it_names(tmp_path: Path, through: str) -> None:
    big = os.urandom(5 << 20)  # more than the pipe holds, so it is spliced in several goes
    members = [("files/dir", None, "dir"), ("files/dir/a", b"abc", "file"), ("files/dir/big", big, "file")]
    data = _stream(_good(*members, _end(3, 3 + len(big) + len(SETTINGS))))
    places = {p: tmp_path / p for p in ("settings", "harness", "chats", "files")}
    with _piped(data) if through == "pipe" else _from_file(data, tmp_path) as stream:
        read_header(stream)
        unpacked = read_stream(stream, lambda _: places)
    assert unpacked.manifest.agent.id == "abcdefabcdef"
    assert (tmp_path / "files" / "dir" / "a").read_bytes() == b"abc"
    assert (tmp_path / "files" / "dir" / "big").read_bytes() == big


# --- how long a moved agent's files stay ------------------------------------------------------


def test_keep_moved_reads_days_hours_and_never() -> None:
    assert keep_for("30d") == timedelta(days=30)
    assert keep_for("90d") == timedelta(days=90)
    assert keep_for("12h") == timedelta(hours=12)
    assert keep_for("never") is None
    with pytest.raises(Exception, match="keep_moved"):
        keep_for("a month")


def test_kept_files_go_when_their_time_is_up(world: World) -> None:
    files = world.root / "agents" / ".kept" / "work-abcdefabcdef" / "Home"
    files.mkdir(parents=True)
    notes = world.root / "config" / "agents" / ".moved"
    notes.mkdir(parents=True)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    note = MovedNote(name="work", id="abcdefabcdef", to="box", at=at, files=str(files), until=at + timedelta(days=30))
    save_toml(notes / "abcdefabcdef.toml", note)
    assert sweep_kept(world.layout, now=at + timedelta(days=29)) == []
    assert files.exists()
    assert sweep_kept(world.layout, now=at + timedelta(days=31)) == [files]
    assert not files.exists()
    assert "moved to box" in world.lnk("agent", "start", "work", ok=False).stderr


def test_a_state_path_out_of_its_folder_is_refused() -> None:
    assert str(relative_path("state/sessions")) == "state/sessions"
    assert str(relative_path(".")) == "."
    for bad in ("../elsewhere", "/etc", "state/../../x"):
        with pytest.raises(LinkError, match="not a path inside"):
            relative_path(bad)


def test_a_link_in_the_way_of_the_files_is_refused_before_anything_changes(world: World, tmp_path: Path) -> None:
    home = world.layout.agent("work").home
    home.mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (home / "work").symlink_to(tmp_path / "elsewhere")  # the stream's files/work/a would land through it
    before = _snapshot(world)
    data = _stream(_good(("files/work/a", b"x", "file"), _end(2, 1 + len(SETTINGS))))
    with pytest.raises(MoveError, match="is a link here"), _from_file(data, tmp_path) as stream:
        receive(world.layout, stream, lambda _: None)
    assert _snapshot(world) == before
    assert list((tmp_path / "elsewhere").iterdir()) == []
