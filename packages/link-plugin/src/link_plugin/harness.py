"""The harness adapter contract: `lnk-<harness> <command>`.

The core hands an adapter its context through the environment: `LNK_PORT` (the first port of
the agent's block) on every command, and `LNK_SETTINGS` (a JSON file holding `HarnessSettings`)
on every command that reads the agent's settings. An older adapter ignores variables it doesn't
know, which keeps every addition here additive.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from link_plugin.answers import Answer
from link_plugin.contract import CONTRACT_COMMAND, Command
from link_plugin.model import Model
from link_plugin.permissions import NAMES as PERMISSION_NAMES

ENV_PORT = "LNK_PORT"
ENV_SETTINGS = "LNK_SETTINGS"
ENV_MEMORY = "LNK_MEMORY"
"""The address of the agent's memory tool, for a harness that reads its tools from its environment."""
ENV_TOOLS = "LNK_TOOLS"
"""JSON object of tool name -> MCP address, for a harness that reads its tools from its environment."""

DEFAULT_PORT_COUNT = 200
"""What an adapter that doesn't answer `ports` takes."""


# --- the answers ---------------------------------------------------------------------------


class Need(Model):
    """A permission the harness needs beyond the defaults, in its own words."""

    name: str
    why: str

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        if name not in PERMISSION_NAMES:
            known = ", ".join(sorted(PERMISSION_NAMES))
            raise ValueError(f"unknown permission {name!r} (known: {known})")
        return name


class Risk(Model):
    """Something running the harness opens that no permission names."""

    name: str
    why: str
    optional: bool = False
    """True when the harness runs without it; `without` says what it does then."""
    without: str | None = None

    @field_validator("name")
    @classmethod
    def _not_a_permission(cls, name: str) -> str:
        if name in PERMISSION_NAMES:
            raise ValueError(f"a risk can't take the name of the permission {name!r}")
        return name


class Needs(Answer):
    permissions: list[Need] = Field(default_factory=list)
    risks: list[Risk] = Field(default_factory=list)


class Channels(Answer):
    channels: list[str] = Field(default_factory=list)
    """Channels the harness speaks itself. One with an endpoint also speaks every channel Link carries."""


class Ports(Answer):
    count: int = Field(ge=1)
    """How many ports the harness takes from LNK_PORT on."""
    default: int | None = Field(default=None, ge=1, le=65535)
    """The first port the agent `main` keeps, the harness's usual one."""


class Folders(Answer):
    writes: list[str]
    """Folders of the agent's folder the harness writes (e.g. `chats`), besides its own home."""


class Endpoint(Answer):
    url: str
    """The loopback chat-completions base URL, e.g. http://127.0.0.1:18800/v1."""
    proof: bool = False
    """It answers the proof challenge (POST /_link/proof)."""
    agent: bool = False
    """It answers as the agent `Link-Agent` names, and refuses one it doesn't run."""
    tools: bool = False
    """It narrows a conversation's tools by `Link-Tools`."""
    once: bool = False
    """It keeps a message once per `Link-Message-Id` and names every answer with `Link-Answer-Id`."""

    @field_validator("url")
    @classmethod
    def _loopback(cls, url: str) -> str:
        from urllib.parse import urlsplit

        host = urlsplit(url).hostname or ""
        if urlsplit(url).scheme != "http" or host not in {"127.0.0.1", "localhost", "::1"}:
            raise ValueError("an endpoint is a plain http address on the loopback")
        return url


class NoEndpoint(Answer):
    """The default for a harness that answers no endpoint: it speaks its channels itself."""


class Hosts(Answer):
    hosts: list[str] = Field(default_factory=list)
    """What its installer and configure reach."""


class State(Answer):
    paths: list[str]
    """Paths in the harness's home that are state on a move ("." for all of it)."""


class Done(Answer):
    """The answer of a step that acts: install, configure, link."""

    ok: bool = True
    detail: str = ""


class Start(Answer):
    argv: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None


class Health(Answer):
    ok: bool | None
    """None: the adapter can't tell, and Link checks the harness's ports itself."""
    detail: str = ""


DESCRIBED = ("ports", "needs", "channels", "folders", "endpoint", "hosts", "state", "start")
"""The questions `describe` answers at once; the other commands act, or need the running harness."""


class Description(Answer):
    """`describe`: every question Link asks before a start, in one answer.

    Each field holds what its command answers. An adapter may leave a field out: Link then asks
    that command, as it asks an adapter that doesn't answer `describe` at all. `answers` names the
    commands the adapter answers: one it doesn't name takes its default without being run, so a
    harness with nothing to install or configure costs no process there. Link keeps the answer
    per release of the adapter (its executable's path, size and modification time) and per
    `LNK_PORT`, the only variable `describe` is given: an answer that depends on the agent's
    settings is left out here and asked of its own command.
    """

    answers: list[str]
    """Every command the adapter answers (exit 0 or 1), besides `contract` and `describe`."""
    ports: Ports | None = None
    needs: Needs | None = None
    channels: Channels | None = None
    folders: Folders | None = None
    endpoint: Endpoint | None = None
    hosts: Hosts | None = None
    state: State | None = None
    start: Start | None = None
    """The command that runs the harness, when it doesn't depend on the agent's settings."""

    def known(self, name: str) -> Answer | None:
        """What `name` answers as this description says: its field, or the command's default when
        the adapter doesn't answer it; None when the command must be asked."""
        if name not in self.answers:
            default = next(command.default for command in COMMANDS if command.name == name)
            return default() if default is not None else None
        found = getattr(self, name, None) if name in DESCRIBED else None
        return found if isinstance(found, Answer) else None


def ask_each() -> Description:
    """What an adapter that doesn't answer `describe` stands for: it answers every command, each
    asked on its own, as before `describe` was."""
    return Description(answers=[c.name for c in COMMANDS if c.name not in ("contract", "describe")])


# --- what the core hands the adapter (LNK_SETTINGS) ---------------------------------------


class AgentRef(Model):
    name: str
    id: str = Field(pattern=r"^[a-z0-9]{12}$")
    owner: str


class ModelRef(Model):
    name: str
    """e.g. claude-sonnet-5-5, gpt-6-luna, openrouter/auto, local/qwen3."""
    provider: Literal["anthropic", "openai", "openrouter", "local"]
    url: str
    """The base URL the harness calls; behind the proxy, the provider's plain-http address."""
    key: str | None = None
    """The provider's key, only when the agent's keys aren't wired (`lnk agent keys wire off`):
    then the harness holds its own and sends it itself. None (the default): the proxy adds it.
    Given to `start` only."""


class AgentFolders(Model):
    agent: str
    home: str
    chats: str
    harness_home: str


class Turns(Model):
    busy: Literal["steer", "queue", "stop"] = "steer"
    renew: float = Field(default=10.0, gt=0)
    lapse: float = Field(default=60.0, gt=0)


class HarnessSettings(Answer):
    """The agent as the adapter sees it. Never holds a channel token, nor a model key unless the
    owner turned the agent's wired keys off (`model.key`)."""

    contract: int
    agent: AgentRef
    model: ModelRef | None = None
    folders: AgentFolders
    ports: list[int] = Field(default_factory=list)
    endpoint_key: str | None = None
    """The key the endpoint takes (Bearer), made by Link at each start; given to `start` only."""
    tools: dict[str, str] = Field(default_factory=dict)
    """Tool name -> MCP streamable-HTTP address."""
    channels: dict[str, dict[str, object]] = Field(default_factory=dict)
    proxied: bool | None = None
    """Whether the harness runs behind its proxy; None from a core that doesn't say."""
    allowed: list[str] = Field(default_factory=list)
    """The risks the owner allowed."""
    turns: Turns = Field(default_factory=Turns)
    hops: int = Field(default=4, ge=0)
    """The cap on Link-Hops a message from someone else may carry."""
    notes_max: int = Field(default=4096, ge=0)
    """[instructions.max] notes: how much of the notes file goes into every prompt."""


# --- the commands --------------------------------------------------------------------------

_SETTINGS = (ENV_PORT, ENV_SETTINGS)

COMMANDS: tuple[Command, ...] = (
    CONTRACT_COMMAND,
    Command(
        "describe",
        Description,
        "Everything Link asks before a start in one answer, kept per release and port.",
        default=ask_each,
        inputs=(ENV_PORT,),
    ),
    Command(
        "needs", Needs, "Permissions and risks beyond the defaults, each with why.", default=Needs, inputs=_SETTINGS
    ),
    Command(
        "channels",
        Channels,
        "The channels the harness speaks itself.",
        default=lambda: Channels(channels=["telegram"]),
        inputs=_SETTINGS,
    ),
    Command(
        "ports",
        Ports,
        "How many ports it takes, and main's usual first port.",
        default=lambda: Ports(count=DEFAULT_PORT_COUNT),
    ),
    Command(
        "folders", Folders, "Which folders of the agent's folder it writes.", default=lambda: Folders(writes=["Home"])
    ),
    Command(
        "endpoint",
        Endpoint,
        "Its loopback chat-completions endpoint and what it answers there.",
        default=NoEndpoint,
        inputs=(ENV_PORT,),
    ),
    Command("hosts", Hosts, "The hosts its installer and configure reach.", default=Hosts),
    Command("state", State, "Which paths of its home are state on a move.", default=lambda: State(paths=["."])),
    Command(
        "install", Done, "Install the harness into its home (runs in the sandbox).", default=Done, inputs=_SETTINGS
    ),
    Command("configure", Done, "Write the harness's configuration from the settings.", default=Done, inputs=_SETTINGS),
    Command("start", Start, "The command that runs the harness (Link runs it in the sandbox).", inputs=_SETTINGS),
    Command(
        "health",
        Health,
        "Whether the running harness answers on its ports.",
        default=lambda: Health(ok=None, detail="the adapter doesn't say; Link checks its ports"),
        inputs=_SETTINGS,
    ),
    Command(
        "link",
        Done,
        "Link a channel as a device, for a harness that links it itself.",
        args=("channel",),
        default=lambda: Done(ok=False, detail="this harness links no device"),
        inputs=_SETTINGS,
    ),
)
