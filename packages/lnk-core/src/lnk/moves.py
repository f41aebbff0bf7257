"""Moving an agent: what `lnk agent send`, `receive` and `sent` do around the stream (`lnk.movestream`).

    lnk agent send work | ssh box lnk agent receive | lnk agent sent work

`send` stops the agent and writes it: its settings and keys, its grants (the first line), the
harness's state as its adapter names it, a linked channel's state as its plugin names it, its
conversations, what Link Scheduler has due, and its files folder; never an installed program,
never memory's index (it is rebuilt where the agent arrives, so an index of another engine's
format is never trusted).

`receive` unpacks all of it aside, then puts it in place: the harness's state, conversations and
schedules replace what was there wholly, the files folder is added to (overwritten, never deleted). Then it
starts the agent, asking for what the harness needs here as a start does, and prints a receipt
once the agent runs with its ID.

`sent` reads that receipt. Only then does the machine the agent left delete its settings, state
and keys, keep its files for `keep_moved` (machine.toml: "30d" by default, "90d", "never"), and
leave a note of where it went, so that `start` refuses it. No receipt: it stays here, stopped.
Between `send` and `sent` the agent may already answer where it went, so `start` refuses it here
too (two of it would poll one bot) until `sent --cancel` says the move is off.

Nothing here follows a symbolic link: folders are opened one by one without following any, and
files are renamed into them by descriptor.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import IO, Any

import tomli_w
from pydantic import Field, ValidationError

from link_plugin.contract import Kind
from link_plugin.errors import LinkError
from link_plugin.files import SettingsError, load_toml, read_toml, save_toml, write_atomic
from link_plugin.layout import Layout
from link_plugin.model import Model
from link_plugin.settings import AgentSettings
from lnk import __version__
from lnk.agents import Agent, all_agents, check_name, load_agent
from lnk.known import DEFAULT_HARNESS
from lnk.machine import load_machine
from lnk.movestream import (
    AgentRef,
    Header,
    Manifest,
    MoveError,
    Reader,
    Source,
    Written,
    read_header,
    read_stream,
    write_stream,
)
from lnk.trees import relative_path

Say = Callable[[str], None]

WIDENING = ("read-home", "localhost", "lan", "open")
"""Permissions a stream's grants never give: each opens this machine (its home, its loopback, its
network, its programs) to an agent whose grants another machine wrote."""


# --- notes of agents that left ------------------------------------------------------------------


class MovedNote(Model):
    """~/.config/lnk/agents/.moved/<id>.toml: where an agent went, and its files kept here."""

    name: str
    id: str
    to: str
    at: datetime
    files: str | None = None
    """Where its files folder is kept, until `until` (None: until you delete it)."""
    until: datetime | None = None
    grants: dict[str, Any] = Field(default_factory=dict)
    """Its grants here, given back if it comes back."""


def _notes(layout: Layout) -> Path:
    return layout.config / "agents" / ".moved"


def moved_notes(layout: Layout) -> list[MovedNote]:
    folder = _notes(layout)
    return [load_toml(path, MovedNote) for path in sorted(folder.glob("*.toml"))] if folder.is_dir() else []


def moved_away(layout: Layout, name: str) -> MovedNote | None:
    return next((note for note in moved_notes(layout) if note.name == name), None)


def refuse_moved(layout: Layout, name: str) -> None:
    """`start` of an agent that moved away: it runs elsewhere, and one agent runs in one place."""
    note = moved_away(layout, name)
    if note is None:
        return
    until = f" until {note.until:%Y-%m-%d}." if note.until else "."
    kept = f" Its files are kept in {note.files}{until}" if note.files else ""
    raise LinkError(
        f"{name} ({note.id}) moved to {note.to} on {note.at:%Y-%m-%d %H:%M}: it runs there, not here.{kept}",
        f"Move it back with lnk agent send there, or delete {_notes(layout) / (note.id + '.toml')} to reuse the name.",
    )


def keep_for(value: str) -> timedelta | None:
    """keep_moved: "30d", "90d", "12h", or "never" (None: kept until you delete them)."""
    if value.strip() == "never":
        return None
    found = re.fullmatch(r"\s*(\d+)\s*([dh])\s*", value)
    if not found:
        raise LinkError(
            f"machine.toml: keep_moved = {value!r} is not how long to keep a moved agent's files.",
            'Write a number of days or hours ("30d", "90d", "12h"), or "never".',
        )
    number = int(found.group(1))
    return timedelta(days=number) if found.group(2) == "d" else timedelta(hours=number)


def sweep_kept(layout: Layout, now: datetime | None = None) -> list[Path]:
    """Delete the kept files of agents that moved away longer ago than they are kept; the notes stay."""
    now = now or datetime.now(UTC)
    gone = []
    for note in moved_notes(layout):
        if note.files and note.until and note.until <= now:
            shutil.rmtree(note.files, ignore_errors=True)
            gone.append(Path(note.files))
            save_toml(_notes(layout) / f"{note.id}.toml", note.model_copy(update={"files": None}))
    return gone


# --- an agent on its way -----------------------------------------------------------------------


class Sending(Model):
    """<agent's settings>/sending.toml: the agent was sent at `at`; `sent` hasn't finished the move."""

    at: datetime


def _sending(agent: Agent) -> Path:
    return agent.config.root / "sending.toml"


def refuse_sending(agent: Agent) -> None:
    """`start` of an agent sent away and not yet `sent`: it may answer where it went already."""
    path = _sending(agent)
    if not path.is_file():
        return
    at = load_toml(path, Sending).at
    name = agent.name
    raise LinkError(
        f"{name} was sent to another machine at {at.astimezone():%Y-%m-%d %H:%M}, and the move isn't finished: "
        "it may be running there, and two of it would answer one bot twice.",
        f"Feed receive's receipt to lnk agent sent {name} to finish the move; or, if it didn't arrive (or you "
        f"deleted it there), lnk agent sent {name} --cancel keeps it here, then lnk agent start {name}.",
    )


def cancel_sending(agent: Agent) -> bool:
    """The move is off: the agent stays here and starts again. Whether it was on its way."""
    path = _sending(agent)
    if not path.is_file():
        return False
    path.unlink()
    return True


# --- folders without following a link --------------------------------------------------------


_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@contextmanager
def _folder(root: Path, parts: tuple[str, ...]) -> Iterator[int]:
    """root/parts opened as a descriptor, each folder made when missing and none followed if a link."""
    fd = os.open(root, _DIR)
    try:
        for part in parts:
            with suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=fd)
            try:
                inner = os.open(part, _DIR, dir_fd=fd)
            except OSError as exc:
                raise MoveError(
                    f"{root.joinpath(*parts)} goes through {part!r}, a link or not a folder: a move follows no link.",
                    "Move that link away, then receive again.",
                ) from exc
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _replace_whole(staged: Path, root: Path, path: PurePosixPath, trash: Path) -> None:
    """root/path becomes what was staged: what was there goes to the trash (a link as a link)."""
    if path == PurePosixPath("."):
        if os.path.lexists(root):
            os.rename(root, trash / f"whole-{len(os.listdir(trash))}")
        root.parent.mkdir(parents=True, exist_ok=True)
        if staged.exists():
            os.rename(staged, root)
        else:
            root.mkdir()
        return
    with _folder(root, path.parts[:-1]) as fd:
        name = path.parts[-1]
        with suppress(FileNotFoundError):
            os.rename(name, trash / f"part-{len(os.listdir(trash))}", src_dir_fd=fd)
        if os.path.lexists(staged):
            os.rename(staged, name, dst_dir_fd=fd)


def _refuse_in_the_way(staged: Path, root: Path) -> None:
    """Before anything is swapped: every folder the stream's files go into is a folder here or
    nothing yet, never a link or a file, and no file lands where a folder is."""
    for folder, dirs, files in os.walk(staged):
        here = root / Path(folder).relative_to(staged)
        for name, is_dir in [*((d, True) for d in dirs), *((f, False) for f in files)]:
            try:
                there = os.lstat(here / name)
            except FileNotFoundError:
                continue
            if is_dir and not stat.S_ISDIR(there.st_mode):
                what = "a link" if stat.S_ISLNK(there.st_mode) else "a file"
                raise MoveError(
                    f"{here / name} is {what} here, and a folder of the agent's files in the stream.",
                    "Nothing here was changed. A move follows no link: move it away, then receive again.",
                )
            if not is_dir and stat.S_ISDIR(there.st_mode):
                raise MoveError(
                    f"{here / name} is a folder here, and a file in the stream.",
                    "Nothing here was changed. Move that folder away, then receive again.",
                )


def _add_files(staged: Path, root: Path) -> None:
    """Every staged file into root, overwriting, never deleting: the files folder is the person's."""
    root.mkdir(parents=True, exist_ok=True)
    for folder, _dirs, files in os.walk(staged):
        parts = PurePosixPath(Path(folder).relative_to(staged).as_posix()).parts
        parts = tuple(p for p in parts if p != ".")
        with _folder(root, parts) as fd:
            for name in files:
                os.replace(Path(folder) / name, name, dst_dir_fd=fd)


# --- send --------------------------------------------------------------------------------------


def grants_here(agent: Agent) -> dict[str, Any]:
    return read_toml(agent.config.sandbox) if agent.config.sandbox.is_file() else {}


def _channel_paths(agent: Agent, channel: str) -> list[str]:
    from link_plugin.channel import ChannelState
    from lnk.channels import channel_program, context

    program = channel_program(channel)
    answer = program.ask_as(ChannelState, Kind.CHANNEL, "state", env=context(agent, channel))
    return [str(relative_path(p)) for p in answer.paths]


def send(agent: Agent, out: IO[bytes], say: Say) -> Written:
    """Stop the agent and write it on `out`."""
    from lnk.harnesses import Harness
    from lnk.services import running, stop_services

    if running(agent) is not None:
        say(f"Stopping {agent.name}: one agent runs in one place, and it is leaving.")
    stop_services(agent)
    harness_name = agent.settings.harness or DEFAULT_HARNESS
    harness = Harness.find(harness_name, agent.folder.harness_home(harness_name))
    state = [str(relative_path(p)) for p in harness.state(agent.port, harness.description(agent.layout, agent.port))]
    channels = {ch: _channel_paths(agent, ch) for ch in sorted(agent.settings.channels)}
    manifest = Manifest(
        agent=AgentRef(name=agent.name, id=agent.id, owner=agent.settings.owner),
        harness=harness_name,
        harness_state=state,
        channels=channels,
        machine=load_machine(agent.layout).name or "a machine",
        lnk=__version__,
    )
    settings = ["settings.toml", "keys.json"]
    settings += [f"channels/{ch}/{p}" for ch, paths in channels.items() for p in paths]
    sources = [
        Source("settings", agent.config.root, settings),
        Source("harness", harness.home, state),
        Source("chats", agent.folder.chats),
        Source("scheduler", agent.folder.scheduler),
        Source("files", agent.folder.home),
    ]
    save_toml(_sending(agent), Sending(at=datetime.now(UTC)))
    try:
        written = write_stream(out, Header(lnk_move=manifest.format, grants=grants_here(agent)), manifest, sources)
    except BaseException:
        # Cut short: no receive can have taken a stream without its end, so the agent is still only here.
        cancel_sending(agent)
        raise
    for link in written.links_left:
        say(f"[yellow]Left out {link}: a symbolic link, never followed by a move.[/yellow]")
    return written


# --- receive -----------------------------------------------------------------------------------


@dataclass
class Taken:
    grants: dict[str, Any]
    withheld: list[str] = field(default_factory=list)


def take_grants(streamed: dict[str, Any], kept_here: dict[str, Any] | None) -> Taken:
    """The grants the agent gets here: its own from before if it comes back, else the stream's without
    any widening: those are named, for the owner to give (lnk agent allow)."""
    if kept_here is not None:
        return Taken(dict(kept_here))
    grants = dict(streamed)
    allow = [str(p) for p in grants.get("allow", [])]
    withheld = [p for p in allow if p in WIDENING] + [f"tcp {t}" for t in grants.get("tcp", [])]
    grants["allow"] = [p for p in allow if p not in WIDENING]
    grants.pop("tcp", None)
    return Taken({k: v for k, v in grants.items() if v != []}, withheld)


class Receipt(Model):
    """What receive prints once the agent answers where it went, and `sent` reads."""

    receipt: str = "lnk-move"
    name: str
    id: str
    machine: str
    running: bool
    endpoint: str | None = None


@dataclass
class Staged:
    manifest: Manifest
    settings: AgentSettings
    config: Path
    agents: Path
    withheld: list[str]
    left_out: list[str]


def _refuse_clash(layout: Layout, manifest: Manifest) -> None:
    name = manifest.agent.name
    check_name(name)
    for other in all_agents(layout):
        if other.name == name and other.id != manifest.agent.id:
            raise MoveError(
                f"Another agent named {name} ({other.id}) is here; the one coming is {manifest.agent.id}.",
                f"Nothing here was changed. Rename or delete this one (lnk agent delete {name}), then receive again.",
            )


def _refuse_taken_bots(layout: Layout, settings: AgentSettings) -> None:
    for other in all_agents(layout):
        if other.id == settings.id:
            continue
        for channel, section in settings.channels.items():
            mine, theirs = section.get("identity"), other.settings.channels.get(channel, {}).get("identity")
            if mine is not None and mine == theirs:
                raise MoveError(
                    f"{other.name} here already answers as {mine} on {channel}: one bot is one agent's.",
                    f"Nothing here was changed. Disconnect it from {other.name} first.",
                )


def _keep_channel_paths(folder: Path, settings: AgentSettings) -> list[str]:
    """Of each channel's folder, only what this machine's own plugin names as its state."""
    left_out: list[str] = []
    channels = folder / "channels"
    if not channels.is_dir():
        return left_out
    from link_plugin.calls import PluginProgram
    from link_plugin.channel import ChannelState
    from lnk.plugins import find

    for came in sorted(p.name for p in channels.iterdir()):
        program = find(f"lnk-{came}")
        names: list[str] = []
        if came in settings.channels and program is not None:
            asked = PluginProgram(program).ask_as(ChannelState, Kind.CHANNEL, "state")
            names = [str(relative_path(p)) for p in asked.paths]
        kept = folder / f"channels-{came}"
        kept.mkdir()
        for name in names:
            source = channels / came / name
            if os.path.lexists(source):
                (kept / name).parent.mkdir(parents=True, exist_ok=True)
                os.rename(source, kept / name)
        if not names and any((channels / came).iterdir()):
            left_out.append(came)
        shutil.rmtree(channels / came)
        os.rename(kept, channels / came)
    return left_out


def _stage(layout: Layout, stream: Reader, header: Header) -> Staged:
    config_tmp = Path(tempfile.mkdtemp(prefix=".receiving-", dir=_made(layout.config / "agents")))
    agents_tmp = Path(tempfile.mkdtemp(prefix=".receiving-", dir=_made(layout.agents)))

    def places(manifest: Manifest) -> dict[str, Path]:
        _refuse_clash(layout, manifest)
        return {
            "settings": config_tmp / "settings",
            "harness": agents_tmp / "harness",
            "chats": agents_tmp / "chats",
            "scheduler": agents_tmp / "scheduler",
            "files": agents_tmp / "files",
        }

    try:
        unpacked = read_stream(stream, places)
        manifest = unpacked.manifest
        folder = config_tmp / "settings"
        try:
            settings = load_toml(folder / "settings.toml", AgentSettings)
        except (SettingsError, FileNotFoundError):
            raise MoveError(
                "The stream carries no settings an agent can run with.", "Nothing here was changed."
            ) from None
        if settings.id != manifest.agent.id:
            raise MoveError(f"The stream's settings are of {settings.id}, its manifest of {manifest.agent.id}.")
        _refuse_taken_bots(layout, settings)
        # Ports are this machine's to give: the agent gets a block here at its first start.
        settings = settings.model_copy(update={"name": manifest.agent.name, "ports": []})
        save_toml(folder / "settings.toml", settings)
        left_out = _keep_channel_paths(folder, settings)
        note = next((n for n in moved_notes(layout) if n.id == manifest.agent.id), None)
        taken = take_grants(header.grants, note.grants if note else None)
        if taken.grants:
            write_atomic(folder / "sandbox.toml", tomli_w.dumps(taken.grants))
        return Staged(manifest, settings, config_tmp, agents_tmp, taken.withheld, left_out)
    except BaseException:
        shutil.rmtree(config_tmp, ignore_errors=True)
        shutil.rmtree(agents_tmp, ignore_errors=True)
        raise


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def _place(layout: Layout, staged: Staged) -> None:
    """The swap: settings folder whole, harness state and conversations whole, files added; memory's
    index of the copy here (if one was) goes, to be rebuilt."""
    manifest = staged.manifest
    name = manifest.agent.name
    trash = Path(tempfile.mkdtemp(prefix=".replaced-", dir=layout.agents))
    try:
        if (staged.agents / "files").is_dir():
            _refuse_in_the_way(staged.agents / "files", layout.agent(name).home)
        if layout.agent_config(name).settings.is_file():
            from lnk.services import stop_services

            stop_services(load_agent(layout, name))  # a copy of it here (the same ID) never runs beside it
        config_root = layout.agent_config(name).root
        config_trash = Path(tempfile.mkdtemp(prefix=".replaced-", dir=staged.config))
        if os.path.lexists(config_root):
            os.rename(config_root, config_trash / "settings")
        os.rename(staged.config / "settings", config_root)
        os.chmod(config_root, 0o700)
        folder = layout.agent(name)
        _made(folder.root)
        harness_home = folder.harness_home(manifest.harness)
        _made(harness_home.parent)
        with _folder(layout.agents, (name, "Harnesses")):
            pass  # the agent's folder and its Harnesses are folders here, never links
        for text in manifest.harness_state:
            path = relative_path(text)
            if path != PurePosixPath("."):
                _made(harness_home)
            _replace_whole(staged.agents / "harness" / path, harness_home, path, trash)
        _replace_whole(staged.agents / "chats", folder.chats, PurePosixPath("."), trash)
        # What is due goes with the agent: a schedule fires where it runs now, and only there.
        _replace_whole(staged.agents / "scheduler", folder.scheduler, PurePosixPath("."), trash)
        memory = folder.root / "Memory"
        if os.path.lexists(memory):
            os.rename(memory, trash / "Memory")
        if (staged.agents / "files").is_dir():
            _add_files(staged.agents / "files", folder.home)
        folder.create()
        (_notes(layout) / f"{manifest.agent.id}.toml").unlink(missing_ok=True)
    finally:
        shutil.rmtree(trash, ignore_errors=True)
        shutil.rmtree(staged.config, ignore_errors=True)
        shutil.rmtree(staged.agents, ignore_errors=True)


def receive(layout: Layout, stream: Reader, say: Say) -> Staged:
    """Unpack the stream aside, then put the agent in place; the caller starts it."""
    header = read_header(stream)
    made = [f for f in (layout.config / "agents", layout.config, layout.agents) if not f.exists()]
    try:
        staged = _stage(layout, stream, header)
        _place(layout, staged)
    except BaseException:
        for folder in made:  # made for this receive, and empty again: a refused stream leaves none
            with suppress(OSError):
                folder.rmdir()
        raise
    name = staged.manifest.agent.name
    for channel in staged.left_out:
        say(f"[yellow]{channel}'s device stayed behind: lnk agent connect {channel} {name} links it here.[/yellow]")
    return staged


def settle(layout: Layout) -> None:
    """What a receive wrote, on the disk: one syncfs(2) for each file system of Link's two roots
    rather than a flush per file. The receipt waits for it, since `sent` deletes the agent where it
    was once it reads one; the placing before it doesn't (a machine that fails between the two
    has both copies, and the one it left keeps running)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    flushed: set[int] = set()
    for root in (layout.config, layout.agents):
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            device = os.fstat(fd).st_dev
            if device not in flushed and libc.syncfs(fd) != 0:
                code = ctypes.get_errno()
                raise LinkError(
                    f"What was received couldn't be written to the disk under {root}: {os.strerror(code)}.",
                    "The agent stays where it was; free the disk or fix it, then send it again.",
                )
            flushed.add(device)
        finally:
            os.close(fd)


def allow(layout: Layout, name: str, permissions: list[str]) -> None:
    """Widenings the owner gave again, here, at a receive."""
    if not permissions:
        return
    path = layout.agent_config(name).sandbox
    grants = read_toml(path) if path.is_file() else {}
    grants["allow"] = sorted({*grants.get("allow", []), *permissions})
    write_atomic(path, tomli_w.dumps(grants))


# --- sent -------------------------------------------------------------------------------------


def read_receipt(text: str, agent: Agent) -> Receipt:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise LinkError(
            f"No receipt came: the move didn't finish, so {agent.name} stays here, stopped.",
            f"If it didn't arrive, lnk agent sent {agent.name} --cancel keeps it here, then lnk agent start "
            f"{agent.name}; if it did, feed receive's receipt to lnk agent sent {agent.name}.",
        )
    try:
        receipt = Receipt.model_validate(json.loads(lines[-1]))
    except (ValueError, ValidationError):
        raise LinkError(
            f"What came on stdin is not a receipt of lnk agent receive; {agent.name} stays here, stopped.",
            f"lnk agent send {agent.name} | ssh HOST lnk agent receive | lnk agent sent {agent.name}",
        ) from None
    if receipt.id != agent.id or not receipt.running:
        raise LinkError(
            f"The receipt is of {receipt.name} ({receipt.id}), {'running' if receipt.running else 'not running'}, "
            f"on {receipt.machine}: not of {agent.name} ({agent.id}) answering there. It stays here, stopped."
        )
    return receipt


def finish_left(agent: Agent, receipt: Receipt, now: datetime | None = None) -> MovedNote:
    """The agent answers elsewhere: delete its settings, state and keys here, keep its files a while."""
    from lnk.services import stop_services
    from lnk.tooldefs import remove_own_tools

    now = now or datetime.now(UTC)
    layout = agent.layout
    stop_services(agent)
    keep = keep_for(load_machine(layout).keep_moved)
    kept: Path | None = None
    if agent.folder.home.exists():
        kept = layout.agents / ".kept" / f"{agent.name}-{agent.id}"
        kept.mkdir(parents=True, exist_ok=True)
        target = kept / "Home"
        if os.path.lexists(target):
            shutil.rmtree(target)
        os.rename(agent.folder.home, target)
        kept = target
    note = MovedNote(
        name=agent.name,
        id=agent.id,
        to=receipt.machine,
        at=now,
        files=str(kept) if kept else None,
        until=now + keep if kept and keep is not None else None,
        grants=grants_here(agent),
    )
    save_toml(_notes(layout) / f"{agent.id}.toml", note)
    remove_own_tools(layout, agent.id)  # defined again where it runs now
    for folder in (agent.config.root, agent.run.root, layout.net(agent.id), agent.folder.root):
        shutil.rmtree(folder, ignore_errors=True)
    return note
