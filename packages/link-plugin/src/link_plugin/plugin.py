"""Build a plugin executable from a Python object, so nobody hand-writes the JSON plumbing.

    from link_plugin.plugin import HarnessAdapter, run

    class Mine(HarnessAdapter):
        name = "mine"
        def start(self, ctx): return Start(argv=[...])

    def main() -> None:
        run(Mine())

Each contract command becomes a subcommand printing one JSON answer on stdout. A method left
as it is in the base class answers nothing (exit 3), and the caller uses the command's default.
`build(plugin)` returns the typer app, so an author can add commands of their own.

Link asks a plugin a command alone on its command line many times at each start (`contract`,
`describe`, `install`, `configure`, `start`...). `run` answers such a command itself, calling
the plugin's method as the typer app would, so typer is neither imported nor built for it: the
answer is the same JSON with the same exit code, in a third of the CPU. Anything else (`--help`,
`link telegram`, options, a command of the author's own, an unknown one) goes to the typer app,
which `run` makes only then (`commandline.py` holds it).
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from link_plugin import channel as channel_contract
from link_plugin import harness as harness_contract
from link_plugin import memory as memory_contract
from link_plugin.answers import Answer, parse_answer
from link_plugin.contract import CONTRACT_VERSION, Command, Contract, Kind
from link_plugin.errors import ExitCode, LinkError, NotAnswered

if TYPE_CHECKING:
    import typer


class Plugin:
    """The base of every plugin object."""

    kind: ClassVar[Kind]
    commands: ClassVar[tuple[Command, ...]]
    name: ClassVar[str]
    release: ClassVar[str | None] = None

    def contract(self) -> Contract:
        return Contract(kind=self.kind, version=CONTRACT_VERSION, name=self.name, release=self.release)


@dataclass
class HarnessContext:
    """What the core hands a harness command: LNK_PORT and the LNK_SETTINGS file."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    @property
    def port(self) -> int | None:
        value = self.env.get(harness_contract.ENV_PORT)
        return int(value) if value else None

    @cached_property
    def settings(self) -> harness_contract.HarnessSettings | None:
        path = self.env.get(harness_contract.ENV_SETTINGS)
        if not path:
            return None
        return parse_answer(harness_contract.HarnessSettings, Path(path).read_text(), source=f"settings file {path}")


class AgentUnknown(Exception):
    """Raised when an answer given to `describe` reads the agent's settings, which `describe` isn't given."""


@dataclass
class DescribeContext(HarnessContext):
    """What `describe` hands each question: LNK_PORT, and no agent."""

    @property
    def settings(self) -> harness_contract.HarnessSettings | None:
        raise AgentUnknown


ACTING = ("install", "configure", "health", "link")
"""Harness commands `describe` never runs: it names them among its answers when the adapter has them."""


class HarnessAdapter(Plugin):
    kind = Kind.HARNESS
    commands = harness_contract.COMMANDS

    def describe(self, ctx: HarnessContext) -> harness_contract.Description:
        """Every question this adapter answers without the agent's settings, each by its own method.

        A question that reads the settings (or fails) is named among the answers and left out,
        so Link asks its command with the settings; one that raises NotAnswered isn't named.
        """
        asking = DescribeContext(env=ctx.env)
        answers: list[str] = []
        found: dict[str, Answer] = {}
        for name in harness_contract.DESCRIBED:
            try:
                found[name] = getattr(self, name)(asking)
            except NotAnswered:
                continue
            except Exception:  # it reads the settings, or fails: its own command says which
                pass
            answers.append(name)
        answers += [name for name in ACTING if getattr(type(self), name) is not getattr(HarnessAdapter, name)]
        return harness_contract.Description.model_validate({"answers": answers, **found})

    def needs(self, ctx: HarnessContext) -> harness_contract.Needs:
        raise NotAnswered

    def channels(self, ctx: HarnessContext) -> harness_contract.Channels:
        raise NotAnswered

    def ports(self, ctx: HarnessContext) -> harness_contract.Ports:
        raise NotAnswered

    def folders(self, ctx: HarnessContext) -> harness_contract.Folders:
        raise NotAnswered

    def endpoint(self, ctx: HarnessContext) -> harness_contract.Endpoint:
        raise NotAnswered

    def hosts(self, ctx: HarnessContext) -> harness_contract.Hosts:
        raise NotAnswered

    def state(self, ctx: HarnessContext) -> harness_contract.State:
        raise NotAnswered

    def install(self, ctx: HarnessContext) -> harness_contract.Done:
        raise NotAnswered

    def configure(self, ctx: HarnessContext) -> harness_contract.Done:
        raise NotAnswered

    def start(self, ctx: HarnessContext) -> harness_contract.Start:
        raise NotAnswered

    def health(self, ctx: HarnessContext) -> harness_contract.Health:
        raise NotAnswered

    def link(self, ctx: HarnessContext, channel: str) -> harness_contract.Done:
        raise NotAnswered


@dataclass
class MemoryContext:
    """What Link hands `command`: the notes file (where it may be written) and the agent."""

    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    @property
    def notes(self) -> Path | None:
        value = self.env.get(memory_contract.ENV_NOTES)
        return Path(value) if value else None

    @property
    def agent_id(self) -> str | None:
        return self.env.get(memory_contract.ENV_AGENT_ID)

    @property
    def owner(self) -> str | None:
        return self.env.get(memory_contract.ENV_OWNER)

    @property
    def model_server(self) -> str | None:
        return self.env.get(memory_contract.ENV_MODEL_SERVER)

    @property
    def embeddings(self) -> str | None:
        return self.env.get(memory_contract.ENV_EMBEDDINGS)

    @property
    def notes_max(self) -> int:
        """[tool.memory] notes: how many bytes the notes file may grow to."""
        value = self.env.get(memory_contract.ENV_NOTES_MAX)
        if not value:
            return memory_contract.NOTES_MAX_DEFAULT
        if not value.isdigit():
            raise LinkError(
                f"{memory_contract.ENV_NOTES_MAX}={value!r} is not a number of bytes.",
                "Set [tool.memory] notes in the agent's settings to a whole number, e.g. 4096.",
            )
        return int(value)


class MemoryEngine(Plugin):
    kind = Kind.MEMORY
    commands = memory_contract.COMMANDS

    def install(self, ctx: MemoryContext) -> harness_contract.Done:
        raise NotAnswered

    def command(self, ctx: MemoryContext, folder: Path, state: Path) -> memory_contract.MemoryCommand:
        raise NotAnswered


@dataclass
class ChannelContext:
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))

    @property
    def agent(self) -> str | None:
        return self.env.get(channel_contract.ENV_AGENT)

    @property
    def agent_id(self) -> str | None:
        return self.env.get(channel_contract.ENV_AGENT_ID)

    @property
    def folder(self) -> Path | None:
        value = self.env.get(channel_contract.ENV_CHANNEL_DIR)
        return Path(value) if value else None

    @property
    def taken(self) -> frozenset[str]:
        """Identities other agents here hold: connect refuses them."""
        value = self.env.get(channel_contract.ENV_CHANNEL_TAKEN)
        return frozenset(json.loads(value)) if value else frozenset()


class ChannelPlugin(Plugin):
    kind = Kind.CHANNEL
    commands = channel_contract.COMMANDS

    def describe(self, ctx: ChannelContext) -> channel_contract.Describe:
        raise NotAnswered

    def connect(self, ctx: ChannelContext, token_stdin: bool) -> channel_contract.Connected:
        """Prompts go to stderr (the terminal); `token_stdin` reads the secret from stdin."""
        raise NotAnswered

    async def bridge(self, spec: channel_contract.BridgeSpec) -> None:
        raise NotAnswered

    def link(self, ctx: ChannelContext) -> harness_contract.Done:
        raise NotAnswered

    def state(self, ctx: ChannelContext) -> channel_contract.ChannelState:
        raise NotAnswered

    def disconnect(self, ctx: ChannelContext) -> harness_contract.Done:
        raise NotAnswered


def say(text: str) -> None:
    """Speak to the person at the terminal: stderr, since stdout holds the answer."""
    print(text, file=sys.stderr, flush=True)


def answer(plugin: Plugin, command: str, call: Callable[[], Any]) -> int:
    """Run one command: its answer on stdout, what went wrong on stderr; the contract's exit code."""
    try:
        result = call()
        if inspect.isawaitable(result):
            import asyncio  # only a coroutine (a bridge) needs its loop

            result = asyncio.run(_awaited(result))
    except NotAnswered:
        say(f"lnk-{plugin.name} doesn't answer `{command}`: the caller uses its default.")
        return ExitCode.NOT_ANSWERED
    except LinkError as exc:
        say(f"lnk-{plugin.name} {command}: {exc}")
        print(json.dumps({"error": exc.message, "hint": exc.hint}))
        return ExitCode.FAILED
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        traceback.print_exc()
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}", "hint": None}))
        return ExitCode.FAILED
    if isinstance(result, Answer):
        print(result.to_json())
    return ExitCode.ANSWERED


async def _awaited(result: Any) -> Any:
    return await result


HARNESS_PLAIN = (
    "describe",
    "needs",
    "channels",
    "ports",
    "folders",
    "endpoint",
    "hosts",
    "state",
    "install",
    "configure",
    "start",
    "health",
)
MEMORY_PLAIN = ("install",)
CHANNEL_PLAIN = ("describe", "link", "state", "disconnect")


def plain(plugin: Plugin) -> dict[str, Callable[[], Any]]:
    """The plugin's commands that take no argument nor option, each as the call that answers it.

    `contract` first, then its kind's in the contract's order. The typer app's commands of these
    names and `run` answer through the same calls.
    """
    calls: dict[str, Callable[[], Any]] = {"contract": plugin.contract}
    names, context = _plain_of(plugin)
    for name in names:
        calls[name] = _with_context(getattr(plugin, name), context)
    return calls


def _plain_of(plugin: Plugin) -> tuple[tuple[str, ...], Callable[[], object]]:
    """The kind's commands without arguments, and the context each is handed."""
    if isinstance(plugin, HarnessAdapter):
        return HARNESS_PLAIN, HarnessContext
    if isinstance(plugin, MemoryEngine):
        return MEMORY_PLAIN, MemoryContext
    if isinstance(plugin, ChannelPlugin):
        return CHANNEL_PLAIN, ChannelContext
    return (), HarnessContext


def _with_context(method: Callable[[Any], Any], context: Callable[[], object]) -> Callable[[], Any]:
    """The method called with a context made as it is called (from the environment then)."""
    return lambda: method(context())


def build(plugin: Plugin) -> typer.Typer:
    """The typer app answering every command of the plugin's contract; an author may add more."""
    from link_plugin.commandline import typer_app

    return typer_app(plugin)


def run(plugin: Plugin, app: Callable[[], typer.Typer] | None = None) -> None:
    """The whole `main()` of a plugin executable.

    A command that takes no argument, alone on the command line, is answered at once. Anything
    else goes to the typer app: `build(plugin)`'s, or the one `app()` makes, for an executable
    with commands of its own (made only then, so its module may import typer freely):

        def main() -> None:
            run(Mine(), app=lambda: importlib.import_module("mine.commands").app)
    """
    args = sys.argv[1:]
    call = plain(plugin).get(args[0]) if len(args) == 1 else None
    if call is not None:
        sys.exit(answer(plugin, args[0], call))
    (app or (lambda: build(plugin)))()()
