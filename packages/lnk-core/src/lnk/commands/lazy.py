"""Command groups whose commands are imported only when one of them runs.

`lnk agent chat` needs none of `lnk model`'s imports, and `lnk --version` none at all: a group
made with `lazy_group` names each of its commands by where it lives ("module:attribute", a Typer
for a group or a function for a command) and imports that module when the command is asked for.
`--help` asks for every command, so it lists them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import get_close_matches
from importlib import import_module

import typer
from typer import _click as click  # the click typer carries: its groups hold its commands
from typer.core import TyperGroup


@dataclass(frozen=True)
class Lazy:
    target: str
    """"module:attribute": a typer.Typer (a group) or a function (a command named by its key)."""
    hidden: bool = False


def load(name: str, lazy: Lazy) -> click.Command:
    """The click command `lazy` names, built as `add_typer` / `command` would have built it."""
    module, _, attribute = lazy.target.partition(":")
    found = getattr(import_module(module), attribute)
    if isinstance(found, typer.Typer):
        command: click.Command = typer.main.get_group(found)
    else:
        holder = typer.Typer(add_completion=False)
        holder.command(name)(found)
        command = typer.main.get_command(holder)
    command.name = name
    command.hidden = command.hidden or lazy.hidden
    return command


class LazyGroup(TyperGroup):
    """A TyperGroup that imports each of its `lazy` commands on first use."""

    lazy: dict[str, Lazy] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *(name for name in self.lazy if name not in self.commands)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.commands[cmd_name] = load(cmd_name, self.lazy[cmd_name])
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.UsageError as error:
            # typer suggests among the commands it holds; the lazy ones are named too.
            unloaded = [name for name in self.lazy if name not in self.commands]
            matches = get_close_matches(args[0], unloaded) if self.suggest_commands and args else []
            if matches and "Did you mean" not in error.message:
                error.message = f"{error.message.rstrip('.')}. Did you mean {', '.join(map(repr, matches))}?"
            raise


def lazy_group(commands: dict[str, Lazy]) -> type[LazyGroup]:
    """The group class for `typer.Typer(cls=...)`: typer builds the group itself, so the table rides
    on the class."""
    return type("LazyGroup", (LazyGroup,), {"lazy": commands})
