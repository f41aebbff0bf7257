"""`lnk agent backup` and `lnk agent restore`: an agent kept in its bucket, and brought back.

A backup writes the harness's state as `.lnk-backup/<harness>.tar` in the files folder, and what
Link Scheduler has due as `.lnk-backup/scheduler.tar` (`lnk.harness_state`), then pushes the files
folder to the bucket: every file that changed since the last backup, nothing deleted there, since
this machine holds the agent's latest copy. Who the agent is (`lnk-agent.json`) and memory's index
go beside it (`lnk.buckets` says the layout). Its keys, tokens, grants and other settings are
never in a backup, not even encrypted.

A restore of an agent that is gone brings back its ID, its files, its harness's state, what Link
Scheduler had due for it and memory's index; its model key and channel tokens are asked again. A
restore of an agent that is here goes back to the backup: the harness's state is replaced wholly,
and nothing else (the files folder is the person's, the settings Link's).
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.layout import Layout
from lnk import buckets, harness_state
from lnk.agents import Agent, all_agents, check_name, create_agent, load_agent
from lnk.buckets import FILES, IDENTITY, Identity
from lnk.known import DEFAULT_HARNESS

INDEX_ATTEMPTS = 5
"""How often a backup writes memory's index again over a newer version another writer put there."""

Say = Callable[[str], None]


@dataclass(frozen=True)
class Restored:
    agent: Agent
    returned: bool
    """True: the agent was here and went back to its backup; False: it was brought back whole."""


def bucket_of(agent: Agent) -> str:
    if not agent.settings.bucket:
        raise LinkError(
            f"{agent.name} has no bucket to back up to.",
            f"`lnk bucket set {agent.name} REMOTE` names one: a folder, or REMOTE:PATH of `lnk bucket config`.",
        )
    return agent.settings.bucket


def harness_home(agent: Agent) -> tuple[str, Path]:
    name = agent.settings.harness or DEFAULT_HARNESS
    return name, agent.folder.harness_home(name)


def state_paths(agent: Agent) -> list[str]:
    """The paths of its home the harness's adapter names as its state."""
    from lnk.harnesses import Harness

    name, home = harness_home(agent)
    return Harness.find(name, home).state(agent.port)


def backup(agent: Agent, say: Say) -> str:
    """Back the agent up to its bucket; the bucket's address."""
    remote = bucket_of(agent)
    name, home = harness_home(agent)
    archive = harness_state.pack(agent, name, home, state_paths(agent))
    harness_state.pack_schedules(agent)
    say(f"The state of its harness ({name}) is in {archive}, what it has scheduled beside it.")
    with tempfile.TemporaryDirectory(prefix="lnk-backup-") as scratch:
        identity = Path(scratch) / IDENTITY
        identity.write_text(_identity(agent).model_dump_json(indent=2) + "\n")
        buckets.put(identity, buckets.join(remote, IDENTITY))
        copied = buckets.push(agent.folder.home, buckets.join(remote, FILES))
        say(f"{copied} file{'' if copied == 1 else 's'} of its files folder changed since the last backup, copied.")
        if agent.settings.memory:
            version = _push_index(agent, agent.settings.memory, Path(scratch))
            if version:
                say(f"Memory's index is kept as version {version}.")
    return remote


def _identity(agent: Agent) -> Identity:
    settings = agent.settings
    return Identity(
        id=settings.id,
        name=settings.name,
        harness=settings.harness,
        model=settings.model,
        memory=settings.memory,
        embeddings=settings.embeddings,
    )


def _push_index(agent: Agent, engine: str, scratch: Path) -> int | None:
    """Memory's state folder, as one archive, written as the index's next version: over the
    version the bucket holds, and again over a newer one another writer put there meanwhile."""
    state = agent.folder.memory_state(engine)
    if not state.is_dir():
        return None
    packed = scratch / "index.tar"
    with tarfile.open(packed, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(p for p in state.rglob("*") if p.is_file() and not p.is_symlink()):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(state).as_posix())
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with path.open("rb") as given:
                tar.addfile(info, given)
    remote = buckets.join(agent.settings.bucket or "", "memory", engine)
    over = 0
    for _ in range(INDEX_ATTEMPTS):
        written = buckets.index_write(remote, packed, over)
        if not written.refused:
            return written.version
        over = written.version
    raise LinkError(
        f"Memory's index at {remote} kept changing while it was written ({INDEX_ATTEMPTS} tries).",
        "Another machine is writing it: back up from the one the agent runs on, then try again.",
    )


def _read_identity(remote: str) -> Identity:
    with tempfile.TemporaryDirectory(prefix="lnk-restore-") as scratch:
        path = Path(scratch) / IDENTITY
        try:
            buckets.get(buckets.join(remote, IDENTITY), path)
        except LinkError as exc:
            raise LinkError(
                f"{remote} holds no backup of an agent ({exc.message}).",
                "Name the bucket `lnk agent backup` wrote to: --from REMOTE.",
            ) from None
        try:
            return Identity.model_validate_json(path.read_text())
        except ValueError:
            raise LinkError(f"{remote}/{IDENTITY} isn't one Link wrote.", "Nothing was changed here.") from None


def restore(layout: Layout, name: str, source: str | None, say: Say, returning: Callable[[Agent], None]) -> Restored:
    """Bring `name` back from `source` (or its own bucket). `returning` runs the going back of an
    agent that is here (the caller pauses it around the change)."""
    check_name(name)
    here = load_agent(layout, name) if layout.agent_config(name).settings.is_file() else None
    remote = source or (here.settings.bucket if here else None)
    if not remote:
        raise LinkError(
            f"Where from? {name} isn't here, so its bucket is unknown.",
            f"`lnk agent restore {name} --from REMOTE` names the bucket its backups went to.",
        )
    identity = _read_identity(remote)
    if here is not None:
        if here.id != identity.id:
            raise LinkError(
                f"{remote} holds the backup of another agent ({identity.name}, {identity.id}), "
                f"not of {name} ({here.id}).",
                f"Nothing was changed. Restore it under a name of its own: `lnk agent restore NEW --from {remote}`.",
            )
        returning(here)
        return Restored(here, returned=True)
    twin = next((a for a in all_agents(layout) if a.id == identity.id), None)
    if twin is not None:
        raise LinkError(
            f"{identity.id} is already here, as {twin.name}: one agent never runs as two.",
            f"`lnk agent restore {twin.name}` takes it back to its backup.",
        )
    return Restored(_bring_back(layout, name, identity, remote, say), returned=False)


def go_back(agent: Agent, say: Say) -> None:
    """Replace the harness's state wholly with the backup's; nothing else changes."""
    remote = bucket_of(agent)
    name, home = harness_home(agent)
    paths = state_paths(agent)
    with tempfile.TemporaryDirectory(prefix="lnk-restore-") as scratch:
        archive = Path(scratch) / f"{name}.tar"
        buckets.get(buckets.join(remote, FILES, harness_state.FOLDER, f"{name}.tar"), archive)
        harness_state.restore(archive, agent, home, paths)
    say(f"{agent.name}'s harness ({name}) is back to its state at the backup; its files and settings are as they were.")


def _bring_back(layout: Layout, name: str, identity: Identity, remote: str, say: Say) -> Agent:
    # Pulled beside the agents' folders (one disk, so each file is renamed into place), and the
    # agent made only once its files and index arrived: a bucket out of reach leaves nothing here.
    layout.agents.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".lnk-restore-", dir=layout.agents) as scratch:
        work = Path(scratch)
        files = work / "Home"
        files.mkdir()
        copied = buckets.pull(buckets.join(remote, FILES), files)
        index = work / "index.tar"
        version = (
            buckets.index_read(buckets.join(remote, "memory", identity.memory), index).version if identity.memory else 0
        )
        agent = create_agent(
            layout,
            name,
            id=identity.id,
            harness=identity.harness,
            model=identity.model,
            memory=identity.memory,
            embeddings=identity.embeddings,
            bucket=remote,
        )
        try:
            _files_in_place(files, agent.folder.home)
            harness, home = harness_home(agent)
            archive = harness_state.archive_path(agent, harness)
            if archive.is_file():
                harness_state.restore(archive, agent, home, state_paths(agent))
            if harness_state.schedules_path(agent).is_file():
                harness_state.restore_schedules(harness_state.schedules_path(agent), agent)
            if version and identity.memory:
                _index_in_place(index, agent.folder.memory_state(identity.memory))
        except BaseException:
            # Half an agent would be a second truth: take back the settings, keep the files.
            shutil.rmtree(agent.config.root, ignore_errors=True)
            raise
    kept = f", memory's index (version {version})" if version else ""
    say(f"{name} ({identity.id}) is back from {remote}: {copied} files, its harness's state{kept}.")
    return agent


def _files_in_place(pulled: Path, home: Path) -> None:
    """The pulled files into the agent's files folder, overwriting, deleting nothing there."""
    for source in sorted(pulled.rglob("*")):
        target = home / source.relative_to(pulled)
        if source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, target)


def _index_in_place(packed: Path, state: Path) -> None:
    """Memory's state folder from the index's archive, unpacked aside and renamed into place. One
    that can't be unpacked is left out: memory indexes the files again, as on a first start."""
    state.parent.mkdir(parents=True, exist_ok=True)
    aside = Path(tempfile.mkdtemp(prefix=f".{state.name}.", dir=state.parent))
    try:
        with tarfile.open(packed, "r:") as tar:
            tar.extractall(aside, filter="data")
    except (tarfile.TarError, OSError):
        shutil.rmtree(aside, ignore_errors=True)
        return
    shutil.rmtree(state, ignore_errors=True)
    os.replace(aside, state)
