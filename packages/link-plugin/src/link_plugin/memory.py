"""The memory engine contract: `lnk-<engine> <command>`.

`command <folder> <state>` answers how to start one session of the engine: a program serving
MCP over stdio for the agent folder `folder`, keeping its index in `state`. Link hands the
context through the environment (older engines ignore what they don't know):
`LNK_NOTES` (the notes file, only where the engine may write it), `LNK_AGENT_ID`, `LNK_OWNER`,
`LNK_MODEL_SERVER` (an OpenAI-compatible address serving embeddings), `LNK_EMBEDDINGS`
(the embedding model the agent's spec names, or `none`) and `LNK_NOTES_MAX` (the spec's
`[tool.memory] notes`: how many bytes the notes file may grow to; 4096 when unset).
"""

from __future__ import annotations

from pydantic import Field

from link_plugin.answers import Answer
from link_plugin.contract import CONTRACT_COMMAND, Command
from link_plugin.harness import Done

ENV_NOTES = "LNK_NOTES"
ENV_AGENT_ID = "LNK_AGENT_ID"
ENV_OWNER = "LNK_OWNER"
ENV_MODEL_SERVER = "LNK_MODEL_SERVER"
ENV_EMBEDDINGS = "LNK_EMBEDDINGS"
ENV_NOTES_MAX = "LNK_NOTES_MAX"
NOTES_MAX_DEFAULT = 4096

_CONTEXT = (ENV_NOTES, ENV_AGENT_ID, ENV_OWNER, ENV_MODEL_SERVER, ENV_EMBEDDINGS, ENV_NOTES_MAX)


class MemoryCommand(Answer):
    """How to start a session serving MCP over stdio."""

    argv: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    """The environment to give it, on top of nothing: Link passes no other variable."""
    notes: str | None = None
    """The notes file it may write, or None when it writes nothing."""
    no_ask: list[str] = Field(default_factory=list)
    """Tool calls that don't ask the owner first (read-only ones, and remember)."""
    writes: list[str] = Field(default_factory=list)
    """Folders it writes besides its state (the notes file's folder); its sandbox opens them."""


COMMANDS: tuple[Command, ...] = (
    CONTRACT_COMMAND,
    Command("install", Done, "Install what the engine needs (a model, a runtime).", default=Done),
    Command(
        "command",
        MemoryCommand,
        "The command serving MCP over stdio for one agent folder.",
        args=("folder", "state"),
        inputs=_CONTEXT,
    ),
)
