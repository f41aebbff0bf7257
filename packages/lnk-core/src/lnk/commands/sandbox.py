"""The sandbox's side of `lnk`: grants, permissions, `lnk agent <harness> ...`, and tools outside it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from link_plugin.errors import LinkError
from link_plugin.store import releases_linked
from lnk import sandboxing
from lnk.agents import DEFAULT_AGENT, all_agents
from lnk.commands.common import JsonOpt, agent, emit, layout, out, say
from lnk.harnesses import harness_of
from lnk.services import running
from lnk.tooldefs import ToolDef, check_tool_name, find_tool, load_tools, remove_tool, save_tool

AgentOpt = Annotated[str, typer.Option("--agent", "-a", help="The agent; main when not named.")]
ItemArg = Annotated[list[str], typer.Argument(help="A permission, `tcp HOST:PORT` or `host NAME`.")]

# --- lnk agent allow / deny / permissions ------------------------------------------------------


def allow(item: ItemArg, name: AgentOpt = DEFAULT_AGENT) -> None:
    """Grant the agent a permission, an endpoint or a host (it follows the agent to any harness)."""
    sandboxing.change(["allow", "--agent", agent(name).name, *item])


def deny(item: ItemArg, name: AgentOpt = DEFAULT_AGENT) -> None:
    """Take a grant back."""
    sandboxing.change(["deny", "--agent", agent(name).name, *item])


def permissions(as_json: JsonOpt = False) -> None:
    """This machine's permissions, each as it works here."""
    found = sandboxing.permissions()
    if as_json:
        emit(found.model_dump(mode="json"))
        return
    table = Table("permission", "by default", f"what it opens ({found.os})")
    for p in found.permissions:
        table.add_row(p.name, "on" if p.on_by_default else "off", p.what)
    out.print(table)


# --- lnk agent <harness> run / check / allow / deny / repermit / show / remove ----------------

harness_app = typer.Typer(help="A harness's sandbox: lnk agent <harness> run|check|allow|deny|repermit|show|remove.")


@harness_app.command()
def run(
    harness: Annotated[str, typer.Argument(help="The harness.")],
    command: Annotated[list[str], typer.Argument(help="The command, after --.")],
    name: AgentOpt = DEFAULT_AGENT,
) -> None:
    """Run a command as the agent's harness would: under its policy, with a proxy of its own."""
    found = agent(name)
    chosen = harness_of(found, harness)
    argv = [sandboxing.program().executable, "run", "--agent", found.name, "--harness", chosen.name, "--", *command]
    raise typer.Exit(subprocess.call(argv))


@harness_app.command()
def check(harness: Annotated[str, typer.Argument()], name: AgentOpt = DEFAULT_AGENT, as_json: JsonOpt = False) -> None:
    """Try each permission from inside a sandbox built as the harness's is, and say what is open."""
    found = agent(name)
    result = sandboxing.check(found, harness_of(found, harness).name)
    if as_json:
        emit(result.model_dump(mode="json"))
        return
    table = Table("permission", "open from inside", "detail")
    for permission, opened in sorted(result.results.items()):
        table.add_row(permission, "[yellow]open[/yellow]" if opened else "closed", result.details.get(permission, ""))
    out.print(table)


@harness_app.command("allow")
def harness_allow(harness: Annotated[str, typer.Argument()], item: ItemArg) -> None:
    """Allow a need the harness declares (for every agent here that runs it)."""
    sandboxing.change(["harness", "allow", "--harness", harness, *item])


@harness_app.command("deny")
def harness_deny(harness: Annotated[str, typer.Argument()], item: ItemArg) -> None:
    """Take back a need the harness declares."""
    sandboxing.change(["harness", "deny", "--harness", harness, *item])


@harness_app.command()
def repermit(harness: Annotated[str, typer.Argument()]) -> None:
    """Forget every answer given for the harness: its next start asks again."""
    sandboxing.change(["harness", "repermit", "--harness", harness])


def _size(folder: Path) -> float:
    """Megabytes in a folder's files, links not followed."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def _traces(home: Path) -> list[Path]:
    """What a harness's home links to outside itself: releases in its adapter's shared store, which
    the sandbox reads but never writes. Only those: a link the harness made elsewhere is its own."""
    return releases_linked(home, f"lnk-{home.name}")


def _users(trace: Path, but: Path) -> list[str]:
    """The agents here (but the home `but`) whose harness homes link to `trace`."""
    users = []
    for other in all_agents(layout()):
        homes = other.folder.root / "Harnesses"
        if homes.is_dir() and any(trace in _traces(h) for h in homes.iterdir() if h.resolve() != but.resolve()):
            users.append(other.name)
    return sorted(set(users))


@harness_app.command()
def show(harness: Annotated[str, typer.Argument()], name: AgentOpt = DEFAULT_AGENT) -> None:
    """Where the harness lives for the agent: its home, and what of it is outside the home."""
    found = agent(name)
    home = found.folder.harness_home(harness)
    if not home.exists():
        out.print(f"{harness} has no home for {found.name}.")
        return
    out.print(f"{harness} for {found.name}: {home} ({_size(home):.1f} MB)", soft_wrap=True)
    for trace in _traces(home):
        users = ", ".join(_users(trace, home)) or "no other agent"
        out.print(
            f"  outside it: {trace} ({_size(trace):.1f} MB, shared read-only; also used by {users})", soft_wrap=True
        )


@harness_app.command()
def remove(harness: Annotated[str, typer.Argument()], name: AgentOpt = DEFAULT_AGENT) -> None:
    """Delete the harness's home for the agent, and what of it is outside the home unless another
    agent uses it."""
    found = agent(name)
    if running(found) is not None and (found.settings.harness or "link") == harness:
        raise LinkError(f"{found.name} runs {harness} now.", f"`lnk agent stop {found.name}` first.")
    home = found.folder.harness_home(harness)
    if not home.exists():
        say(f"{harness} has no home for {found.name}.")
        return
    traces = _traces(home)
    shutil.rmtree(home)
    say(f"Removed {home}.")
    for trace in traces:
        users = _users(trace, home)
        if users:
            say(f"Kept {trace}: {', '.join(users)} use it.")
        else:
            shutil.rmtree(trace)
            say(f"Removed {trace}.")


HARNESS_VERBS = ("run", "check", "allow", "deny", "repermit", "show", "remove")

# --- lnk sandbox tool ------------------------------------------------------------------------

app = typer.Typer(
    help="What runs outside the sandbox: tools served to harnesses through lnk's tool bridge.", no_args_is_help=True
)
tool_app = typer.Typer(
    help="Tools outside every sandbox, each an MCP server, served to harnesses.", no_args_is_help=True
)
app.add_typer(tool_app, name="tool")


@tool_app.command()
def add(
    name: Annotated[str, typer.Argument(help="The tool's name, as harnesses see it.")],
    command: Annotated[list[str] | None, typer.Argument(help="The MCP server's command (stdio), after --.")] = None,
    url: Annotated[str | None, typer.Option("--url", help="Or an MCP server's streamable-HTTP address.")] = None,
    no_ask: Annotated[
        list[str] | None, typer.Option("--no-ask", help="A call that doesn't ask you first (may repeat).")
    ] = None,
    agents: Annotated[
        list[str] | None, typer.Option("--agent", "-a", help="Give it only to this agent (may repeat).")
    ] = None,
) -> None:
    """Add a tool: `lnk sandbox tool add NAME -- CMD ARGS`. Every call but --no-ask ones asks you first."""
    check_tool_name(name)
    if bool(command) == bool(url):
        raise LinkError(
            "Give the tool a command (after --) or an --url, and only one.", "lnk sandbox tool add NAME -- CMD"
        )
    for each in agents or []:
        agent(each)
    if command and shutil.which(command[0]) is None:
        raise LinkError(f"{command[0]} is not on PATH.", "Give its full path, or install it first.")
    save_tool(layout(), ToolDef(name=name, argv=command or [], url=url, no_ask=no_ask or [], agents=agents))
    say(f"Added the tool {name}; agents get it at their next start.")


@tool_app.command("list")
def list_(as_json: JsonOpt = False) -> None:
    """The tools outside the sandbox."""
    found = load_tools(layout())
    if as_json:
        emit([t.model_dump(mode="json") for t in found])
        return
    table = Table("tool", "server", "doesn't ask", "agents")
    for t in found:
        table.add_row(
            t.name,
            " ".join(t.argv) or t.url or "",
            ", ".join(t.no_ask),
            ", ".join(t.agents) if t.agents else "every agent",
        )
    out.print(table)


@tool_app.command("remove")
def remove_(name: Annotated[str, typer.Argument()]) -> None:
    """Remove a tool; agents lose it at their next start."""
    if find_tool(layout(), name) is None:
        names = ", ".join(t.name for t in load_tools(layout())) or "none"
        raise LinkError(f"There is no tool {name!r} (tools: {names}).")
    remove_tool(layout(), name)
    say(f"Removed the tool {name}.")
