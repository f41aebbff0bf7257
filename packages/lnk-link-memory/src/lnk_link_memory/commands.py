"""`lnk-link-memory`'s typer app: the memory engine contract, plus serve, status, and the session and
engine it runs. `cli.main` answers a contract's command without arguments itself and hands every
other command line here."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Annotated

import typer

from link_plugin import memory as contract
from link_plugin.layout import AgentFolder
from link_plugin.plugin import build, say
from lnk_link_memory.plugin import ENGINE, LinkMemory

app = build(LinkMemory())


def _default_state(folder: Path) -> Path:
    """Where `serve` keeps a plain folder's index when not told: never inside the folder itself."""
    if (folder / "Home").is_dir():
        return AgentFolder(folder).memory_state(ENGINE)
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    key = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:12]
    return base / "lnk-link-memory" / f"{folder.name}-{key}"


@app.command("serve", help="Serve one folder's memory over stdio to any MCP client (Claude Desktop, Cursor).")
def serve(
    folder: Annotated[Path, typer.Option("--folder", help="The folder of documents to serve.")],
    state: Annotated[
        Path | None, typer.Option("--state", help="Where the index is kept (default: a folder of your own).")
    ] = None,
    notes: Annotated[
        Path | None, typer.Option("--notes", help="The notes file remember writes (default: FOLDER/notes.md).")
    ] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Offer no remember: write nothing in the folder.")
    ] = False,
    embeddings: Annotated[
        str | None,
        typer.Option(
            "--embeddings", envvar=contract.ENV_EMBEDDINGS, help="An embedding model's name, or none for words only."
        ),
    ] = None,
    model_server: Annotated[
        str | None,
        typer.Option(
            "--model-server", envvar=contract.ENV_MODEL_SERVER, help="An OpenAI-compatible /v1/embeddings address."
        ),
    ] = None,
    notes_max: Annotated[
        int, typer.Option("--notes-max", help="Bytes the notes may grow to.")
    ] = contract.NOTES_MAX_DEFAULT,
) -> None:
    from lnk_link_memory import allocator
    from lnk_link_memory.folder import Folder
    from lnk_link_memory.memory import Config, Memory
    from lnk_link_memory.models import ModelError, choose
    from lnk_link_memory.server import build as build_server

    if not folder.is_dir():
        say(f"lnk-link-memory serve: {folder} is not a folder: give the folder of documents to serve.")
        raise typer.Exit(2)
    try:
        choice = choose(embeddings, model_server)
    except ModelError as exc:
        say(f"lnk-link-memory serve: {exc}")
        raise typer.Exit(2) from None
    folder = folder.absolute()
    written = None if read_only else (notes or folder / "notes.md").absolute()
    config = Config(
        folder=Folder.plain(folder, written),
        state=(state or _default_state(folder)).absolute(),
        notes=written,
        notes_limit=notes_max,
        choice=choice,
        label=str(folder),
    )
    allocator.steady()
    memory = Memory(config).start()
    try:
        build_server(memory).run("stdio")
    finally:
        memory.close()


@app.command("session", hidden=True, help="One agent's session: MCP on stdio, passed to the owner's engine.")
def session(
    folder: Annotated[Path, typer.Option("--folder")],
    state: Annotated[Path, typer.Option("--state")],
    socket: Annotated[Path, typer.Option("--socket")],
) -> None:
    from lnk_link_memory.session import run
    from lnk_link_memory.sockets import Hello, default_owner

    env = os.environ
    notes_max = env.get(contract.ENV_NOTES_MAX, "")
    hello = Hello(
        folder=str(folder.absolute()),
        state=str(state.absolute()),
        owner=env.get(contract.ENV_OWNER) or default_owner(),
        agent_id=env.get(contract.ENV_AGENT_ID),
        notes=env.get(contract.ENV_NOTES) or None,
        notes_max=int(notes_max) if notes_max.isdigit() else contract.NOTES_MAX_DEFAULT,
        model_server=env.get(contract.ENV_MODEL_SERVER) or None,
        embeddings=env.get(contract.ENV_EMBEDDINGS) or None,
    )
    raise typer.Exit(run(socket, hello))


@app.command("engine", hidden=True, help="The owner's engine, started by the first session that needs it.")
def engine(socket: Annotated[Path, typer.Option("--socket")], owner: Annotated[str, typer.Option("--owner")]) -> None:
    from lnk_link_memory.engine import main as engine_main

    raise typer.Exit(engine_main(socket, owner))


@app.command("status", help="What the index holds: documents, chunks, embedded, files left out and why, its size.")
def status(
    folder: Annotated[Path, typer.Option("--folder", help="The agent's folder, or the folder `serve` serves.")],
    state: Annotated[
        Path | None, typer.Option("--state", help="Where its index is (default: as serve keeps it).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the status as JSON.")] = False,
) -> None:
    from lnk_link_memory.folder import Folder
    from lnk_link_memory.memory import INDEX, Config, Memory
    from lnk_link_memory.models import Choice
    from lnk_link_memory.store import Corrupt, Store

    where = (state or _default_state(folder)).absolute()
    if not (where / INDEX).is_file():
        say(f"No index at {where / INDEX}: memory hasn't read {folder} yet.")
        raise typer.Exit(1)
    store = Store(where / INDEX)
    try:
        store.open()
    except Corrupt as exc:
        say(f"The index at {where / INDEX} is corrupt ({exc}): memory builds it again when it next runs.")
        raise typer.Exit(1) from None
    agent = (folder / "Home").is_dir()
    tree = Folder.agent(folder.absolute(), None) if agent else Folder.plain(folder.absolute(), None)
    config = Config(tree, where, None, 0, Choice(store.meta("model") or "none"), str(folder.absolute()))
    answer = Memory(config).status()
    store.close()
    if as_json:
        print(answer.model_dump_json(indent=2))
        return
    print(
        f"{answer.folder}: {answer.documents} documents ({answer.conversations} conversations), {answer.chunks} chunks"
    )
    print(f"embedding ({answer.model}): {answer.embedding}; index {answer.index_bytes / 2**20:.1f} MiB")
    for skipped in answer.skipped:
        print(f"left out: {skipped.path}: {skipped.why}")
