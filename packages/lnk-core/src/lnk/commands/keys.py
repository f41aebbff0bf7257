"""`lnk agent keys`: an agent's model keys, kept 0600 outside every sandbox and handed only to the proxy.

`lnk agent keys wire on|off` is the switch for who sends the key. On (Link's default), the proxy
adds it outside the sandbox, for the providers Link knows, and the harness never holds it. Off,
for a harness that ignores the proxy's address (it speaks TLS to its provider itself, so the proxy
can't add anything): its start is handed the key in its settings, and the proxy adds none.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer
from rich.prompt import Prompt

from link_plugin.errors import LinkError
from link_plugin.providers import PROVIDERS
from lnk.agents import DEFAULT_AGENT, Agent, load_agent, load_or_create
from lnk.commands.common import AgentArg, JsonOpt, emit, err, layout, out, say
from lnk.models import keys_wired
from lnk.services import running

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
    held = "Only its proxy reads it; its harness never sees it."
    if not keys_wired(found.settings):
        held = "Its harness is handed it at each start (its keys aren't wired: lnk agent keys wire on)."
    say(f"Kept {name}'s {provider} key. {held}")


@app.command("list")
def list_(name: AgentArg = DEFAULT_AGENT, as_json: JsonOpt = False) -> None:
    """Which keys the agent has (never their values)."""
    found = load_agent(layout(), name)
    names = found.keys.names()
    wired = keys_wired(found.settings)
    if as_json:
        emit({"agent": name, "keys": names, "secure": found.keys.secure(), "wired": wired})
        return
    for key in names:
        out.print(key)
    if not names:
        say(f"{name} has no keys: `lnk agent keys set anthropic {name}`.")
    say(_wired_text(name, wired))
    if not found.keys.secure():
        say(f"[red]{found.config.keys} can be read by others: chmod 600 it.[/red]")


@app.command("delete")
def delete(provider: ProviderArg, name: AgentArg = DEFAULT_AGENT) -> None:
    """Forget a provider's key."""
    _provider(provider)
    found = load_agent(layout(), name)
    say(f"Forgot {name}'s {provider} key." if found.keys.delete(provider) else f"{name} had no {provider} key.")


class Wire(StrEnum):
    on = "on"
    off = "off"
    default = "default"


def _wired_text(name: str, wired: bool) -> str:
    if wired:
        return f"{name}'s proxy adds its key; its harness never holds it (lnk agent keys wire off to change)."
    return f"{name}'s harness holds its key: it is handed it at each start (lnk agent keys wire on to change)."


@app.command()
def wire(
    switch: Annotated[
        Wire, typer.Argument(help="on: the proxy adds the key; off: the harness holds it; default: Link's (on).")
    ],
    name: AgentArg = DEFAULT_AGENT,
) -> None:
    """Whether the proxy adds the agent's model key (on, Link's default) or its harness holds its own (off)."""
    found = _agent_for_keys(name)
    value = None if switch is Wire.default else switch is Wire.on
    found = found.with_settings(wire_keys=value)
    found.save()
    say(_wired_text(name, keys_wired(found.settings)))
    if running(found) is not None:
        say(f"It holds from {name}'s next start: lnk agent restart {'' if name == DEFAULT_AGENT else name}".rstrip())
