"""Link Memory as a memory engine plugin: `lnk-link-memory contract | install | command <folder> <state>`."""

from __future__ import annotations

import sys
from pathlib import Path

from link_plugin import memory as contract
from link_plugin.errors import LinkError
from link_plugin.harness import Done
from link_plugin.plugin import MemoryContext, MemoryEngine
from lnk_link_memory import __version__
from lnk_link_memory.sockets import default_owner, engine_socket

ENGINE = "link"
"""The engine's name: its state lives in the agent's Memory/link/."""


class LinkMemory(MemoryEngine):
    name = "link-memory"
    release = __version__

    def install(self, ctx: MemoryContext) -> Done:
        """Nothing to fetch: the default model comes with the package. Checked, so a broken install says so now."""
        from lnk_link_memory.models import LOCAL, Choice, ModelError, embedder

        try:
            embedder(Choice(LOCAL)).embed(["ready"])
        except ModelError as exc:
            raise LinkError(str(exc), "Reinstall lnk-link-memory.") from exc
        return Done(ok=True, detail="the default embedding model (all-MiniLM-L6-v2, int8) is installed and checked")

    def command(self, ctx: MemoryContext, folder: Path, state: Path) -> contract.MemoryCommand:
        # Imported here: every command of the plugin (a session's too) starts with this module, and
        # only this one needs the answers' models and the embedding models (numpy).
        from lnk_link_memory.answers import READ_ONLY, REMEMBER
        from lnk_link_memory.models import ModelError, choose

        try:
            choose(ctx.embeddings, ctx.model_server)
        except ModelError as exc:
            raise LinkError(str(exc), "Fix `embeddings` in the agent's settings (or set it to none).") from exc
        owner = ctx.owner or default_owner()
        socket = engine_socket(folder, owner)
        # Made here, outside any sandbox: a session's sandbox is given the folder, and only one that exists.
        socket.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        env = {contract.ENV_OWNER: owner, contract.ENV_NOTES_MAX: str(ctx.notes_max)}
        for name in (contract.ENV_AGENT_ID, contract.ENV_MODEL_SERVER, contract.ENV_EMBEDDINGS, contract.ENV_NOTES):
            if ctx.env.get(name):
                env[name] = ctx.env[name]
        notes = ctx.notes
        argv = [sys.executable, "-m", "lnk_link_memory", "session", "--folder", str(folder), "--state", str(state)]
        return contract.MemoryCommand(
            argv=[*argv, "--socket", str(socket)],
            env=env,
            notes=str(notes) if notes else None,
            no_ask=[*READ_ONLY, REMEMBER] if notes else list(READ_ONLY),
            writes=[*([str(notes.parent)] if notes else []), str(socket.parent)],
        )
