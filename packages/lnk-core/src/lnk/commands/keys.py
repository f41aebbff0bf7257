"""`lnk agent keys`: an agent's model keys, kept 0600 outside every sandbox and handed only to the proxy."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.prompt import Prompt

from link_plugin.errors import LinkError
from link_plugin.providers import PROVIDERS
from lnk.agents import DEFAULT_AGENT, Agent, load_agent, load_or_create
from lnk.commands.common import AgentArg, JsonOpt, emit, err, layout, out, say

app = typer.Typer(help="An agent's model keys: handed only to its proxy, never to its harness.", no_args_is_help=True)

ProviderArg = Annotated[str, typer.Argument(help=f"The provider: {', '.join(PROVIDERS)}.")]


def _provider(name: str) -> str:
    if name not in PROVIDERS:
        raise LinkError(f"lnk knows no provider {name!r} (providers: {', '.join(PROVIDERS)}).")
    return name


def _agent_for_keys(name: str) -> Agent:
    """The agent, made when it's new, so its key can come before its first start."""
    found, made = load_or_create(layout(), name)
    if made:
        say(f"Made the agent [bold]{name}[/bold] ({found.id}), owned by {found.settings.owner}.")
    return found


@app.command("set")
def set_(
    provider: ProviderArg,
    name: AgentArg = DEFAULT_AGENT,
    stdin: Annotated[bool, typer.Option("--stdin", help="Read the key from stdin instead of asking.")] = False,
) -> None:
    """Keep a provider's key for the agent (0600, outside every sandbox)."""
    _provider(provider)
    found = _agent_for_keys(name)
    key = sys.stdin.read().strip() if stdin else Prompt.ask(f"Your {provider} key", password=True, console=err).strip()
    if not key or any(c.isspace() for c in key):
        raise LinkError("That is not a key: it's empty or holds spaces.", "Paste the key alone.")
    found.keys.set(provider, key)
    say(f"Kept {name}'s {provider} key. Only its proxy reads it; its harness never sees it.")


@app.command("list")
def list_(name: AgentArg = DEFAULT_AGENT, as_json: JsonOpt = False) -> None:
    """Which keys the agent has (never their values)."""
    found = load_agent(layout(), name)
    names = found.keys.names()
    if as_json:
        emit({"agent": name, "keys": names, "secure": found.keys.secure()})
        return
    for key in names:
        out.print(key)
    if not names:
        say(f"{name} has no keys: `lnk agent keys set anthropic {name}`.")
    if not found.keys.secure():
        say(f"[red]{found.config.keys} can be read by others: chmod 600 it.[/red]")


@app.command("delete")
def delete(provider: ProviderArg, name: AgentArg = DEFAULT_AGENT) -> None:
    """Forget a provider's key."""
    _provider(provider)
    found = load_agent(layout(), name)
    say(f"Forgot {name}'s {provider} key." if found.keys.delete(provider) else f"{name} had no {provider} key.")
