"""`lnk agent ...`: start, stop, restart, status, list, delete, logs, chat, use, the tool calls' answers
and the schedules."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from link_plugin.errors import LinkError
from lnk.agents import DEFAULT_AGENT, Agent, load_or_create
from lnk.commands.common import AgentArg, JsonOpt, YesOpt, agent, confirm, emit, err, layout, out, say, terminal
from lnk.commands.lazy import Lazy, lazy_group
from lnk.runstate import PARTS, read_spec
from lnk.services import running, stop_services

if TYPE_CHECKING:
    from link_plugin.harness import Needs
    from lnk.harnesses import Harness
    from lnk.prepare import StartOptions

# What each command needs beyond these is imported where it runs: `chat` never pays for `start`'s.
app = typer.Typer(
    help="Your agents: start them, talk to them, see how they are.",
    no_args_is_help=True,
    cls=lazy_group(
        {
            "connect": Lazy("lnk.commands.channels:connect"),
            "disconnect": Lazy("lnk.commands.channels:disconnect"),
            "allow": Lazy("lnk.commands.sandbox:allow"),
            "deny": Lazy("lnk.commands.sandbox:deny"),
            "permissions": Lazy("lnk.commands.sandbox:permissions"),
            "keys": Lazy("lnk.commands.keys:app"),
            "memory": Lazy("lnk.commands.memory:app"),
            "backup": Lazy("lnk.commands.backups:backup"),
            "restore": Lazy("lnk.commands.backups:restore"),
            "harness": Lazy("lnk.commands.sandbox:harness_app", hidden=True),
            "send": Lazy("lnk.commands.move:send"),
            "receive": Lazy("lnk.commands.move:receive"),
            "sent": Lazy("lnk.commands.move:sent"),
        }
    ),
)

ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="claude-sonnet-5-5, gpt-6-luna, openrouter/auto or local/<name>;"
        " by default, Link's for the provider you have a key for.",
    ),
]
HarnessOpt = Annotated[
    str | None, typer.Option("--harness", help="The harness to run it (Link Harness when none is named).")
]
NoSandboxOpt = Annotated[bool, typer.Option("--no-sandbox", help="This start only: run the harness without a sandbox.")]
UnsandboxedOpt = Annotated[
    bool, typer.Option("--allow-unsandboxed", help="Answer yes to a harness's need for no sandbox at all.")
]


def _ask_for_key(agent: Agent) -> None:
    """A newcomer's first start: ask for a model key in the terminal rather than fail."""
    from rich.prompt import Prompt

    from link_plugin.providers import PROVIDERS

    say(f"{agent.name} needs a model. lnk keeps its key where only the proxy reads it, never the harness.")
    provider = Prompt.ask("Provider", choices=list(PROVIDERS), default="anthropic", console=err)
    key = Prompt.ask(f"Your {provider} key", password=True, console=err).strip()
    if not key:
        raise LinkError("No key was given.", f"`lnk agent keys set {provider} {agent.name}` keeps one.")
    agent.keys.set(provider, key)


def start_agent(name: str, options: StartOptions, foreground: bool = False) -> Agent:
    from lnk.models import default_model
    from lnk.moves import refuse_sending, sweep_kept
    from lnk.prepare import prepare
    from lnk.runstate import write_spec
    from lnk.services import service_mode, start_services

    sweep_kept(layout())
    found, made = load_or_create(layout(), name)
    refuse_sending(found)
    if made:
        say(f"Made the agent [bold]{name}[/bold] ({found.id}), owned by {found.settings.owner}.")
    state = running(found)
    if state is not None:
        say(f"{name} is already running (since {datetime.fromtimestamp(state.started):%H:%M:%S}).")
        return found
    if not (options.model or found.settings.model or default_model(found.keys)) and terminal():
        _ask_for_key(found)
    options.mode = "foreground" if foreground else service_mode()
    found, spec = prepare(found, options, say)
    write_spec(found, spec)
    if foreground:
        from lnk.supervisor import supervise  # the runtime's imports are paid only where it runs

        say(f"{name} runs here until Ctrl-C ([dim]{found.logs / 'agent.log'}[/dim]).")
        raise typer.Exit(supervise(found, PARTS, foreground=True))
    with err.status(f"Starting {name}..."):
        start_services(found, options.mode)
    where = spec.endpoint.url if spec.endpoint else f"ports {spec.ports[0]}-{spec.ports[-1]}"
    say(f"[green]{name} is running[/green]: {spec.harness}, {found.settings.model}, {where}.")
    if spec.endpoint is not None:
        say(f"Talk to it: [bold]lnk agent chat{'' if name == DEFAULT_AGENT else ' ' + name}[/bold]")
    return found


def restart_as_before(found: Agent) -> None:
    """lnk's own restart (memory turned on, another harness): the agent runs again as it ran."""
    with paused(found):
        pass


@contextmanager
def paused(found: Agent, why: str = "") -> Iterator[None]:
    """Stop the agent if it runs, and start it again afterwards as it ran (with or without a sandbox)."""
    if running(found) is None:
        yield
        return
    spec = read_spec(found)
    if why:
        say(why)
    stop_services(found)
    try:
        yield
    finally:
        from lnk.prepare import StartOptions  # a start's preparation, only when one starts again

        start_agent(found.name, StartOptions(no_sandbox=spec is not None and spec.no_sandbox))


@app.command()
def start(
    name: AgentArg = DEFAULT_AGENT,
    model: ModelOpt = None,
    harness: HarnessOpt = None,
    foreground: Annotated[
        bool, typer.Option("--foreground", help="Run here, in one process tree, until Ctrl-C.")
    ] = False,
    no_sandbox: NoSandboxOpt = False,
    yes: YesOpt = False,
    allow_unsandboxed: UnsandboxedOpt = False,
) -> None:
    """Start an agent (the first start with no name makes main)."""
    from lnk.prepare import StartOptions

    options = StartOptions(harness, model, no_sandbox, yes, allow_unsandboxed)
    start_agent(name, options, foreground)


@app.command()
def stop(name: AgentArg = DEFAULT_AGENT) -> None:
    """Stop an agent: its harness, its tools and its bridges."""
    found = agent(name)
    say(f"{name} stopped." if stop_services(found) else f"{name} wasn't running.")


@app.command()
def restart(
    name: AgentArg = DEFAULT_AGENT,
    model: ModelOpt = None,
    harness: HarnessOpt = None,
    no_sandbox: NoSandboxOpt = False,
    yes: YesOpt = False,
    allow_unsandboxed: UnsandboxedOpt = False,
) -> None:
    """Stop an agent and start it again."""
    from lnk.prepare import StartOptions

    stop_services(agent(name))
    start_agent(name, StartOptions(harness, model, no_sandbox, yes, allow_unsandboxed))


def _when(stamp: float | None) -> str:
    return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S") if stamp else ""


@app.command()
def status(name: AgentArg = DEFAULT_AGENT, as_json: JsonOpt = False) -> None:
    """How an agent is: running, harness, model, ports, channels, memory, grants, sandbox."""
    from rich.table import Table

    from lnk.status import details

    found = details(agent(name))
    if as_json:
        emit(found)
        return
    table = Table.grid(padding=(0, 2))
    state = f"[green]running[/green] since {_when(found['since'])}" if found["running"] else "[dim]stopped[/dim]"
    process = found["process"]
    if process and process.get("restarts"):
        state += f", harness restarted {process['restarts']} times"
    table.add_row("agent", f"[bold]{found['name']}[/bold] ({found['id']}), owned by {found['owner']}")
    table.add_row("state", state)
    mode = found["sandbox"]
    sandbox = "" if mode is None else " [yellow](no sandbox)[/yellow]" if mode == "none" else f" ({mode})"
    table.add_row("harness", f"{found['harness']}{sandbox}")
    table.add_row(
        "model", f"{found['model'] or '[dim]none yet[/dim]'}" + (f" ({found['provider']})" if found["provider"] else "")
    )
    ports = found["ports"]
    table.add_row("ports", f"{ports[0]}-{ports[-1]}" if ports else "[dim]given at the first start[/dim]")
    if found["endpoint"]:
        table.add_row("endpoint", found["endpoint"])
    channels = [f"{ch} ({info['bridge']})" if info["bridge"] else ch for ch, info in found["channels"].items()]
    table.add_row("channels", ", ".join(channels) or "[dim]none: lnk agent connect telegram[/dim]")
    memory = found["memory"]
    indexed = memory["indexed"]
    shown = memory["engine"] or "[dim]off: lnk agent memory start link[/dim]"
    if indexed is not None:
        shown += f" ({indexed})" if not isinstance(indexed, dict) else f" ({_progress(indexed)})"
    table.add_row("memory", shown)
    table.add_row("tools", ", ".join(found["tools"]) or "[dim]none[/dim]")
    table.add_row("schedules", _pending(found["schedules"]))
    if found["waiting"]:
        table.add_row("waiting", f"[yellow]{found['waiting']} tool calls wait for you: lnk agent approvals[/yellow]")
    table.add_row("keys", "added by its proxy" if found["keys_wired"] else "[yellow]held by its harness[/yellow]")
    for row, shown in _widenings(found["grants"]):
        table.add_row(row, shown)
    out.print(table)


def _pending(schedules: list[dict[str, Any]] | str) -> str:
    if isinstance(schedules, str):
        return f"[yellow]{schedules}[/yellow]"
    if not schedules:
        return "[dim]none[/dim]"
    first = schedules[0]
    return f"{len(schedules)} pending, next {_local(first['at'])}: {first['title'] or first['text'][:40]}"


def _local(at: str) -> str:
    """An ISO time (UTC) as this machine's local time."""
    return datetime.fromisoformat(at).astimezone().strftime("%Y-%m-%d %H:%M")


def _widenings(grants: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The grants as status rows: every widening, whether the agent runs or not."""
    if grants is None:
        return [("grants", "[dim]Link's defaults: lnk agent allow widens them[/dim]")]
    if "permissions" not in grants:
        return [("grants", f"[red]{grants.get('error')}[/red]")]
    hosts = grants["hosts"]
    rows = [
        ("permissions", ", ".join(p for p, on in grants["permissions"].items() if on) or "[dim]none[/dim]"),
        ("hosts", "[dim]any[/dim]" if hosts is None else ", ".join(hosts) or "[dim]none[/dim]"),
    ]
    named = [
        ("endpoints", grants["tcp"]),
        ("harness grants", grants["harness"]),
        ("risks", grants["risks"]),
        ("read-only", grants["files_read"]),
    ]
    rows += [(row, ", ".join(items)) for row, items in named if items]
    rows += [("warning", f"[yellow]{warning}[/yellow]") for warning in grants["warnings"]]
    return rows


def _progress(indexed: dict[str, object]) -> str:
    return ", ".join(f"{k} {v}" for k, v in indexed.items())


@app.command("list")
def list_(as_json: JsonOpt = False) -> None:
    """Every agent on this machine."""
    from rich.table import Table

    from lnk.agents import all_agents
    from lnk.status import summary

    found = [summary(a) for a in all_agents(layout())]
    if as_json:
        emit(found)
        return
    if not found:
        say("No agents yet: `lnk agent start` makes main.")
        return
    table = Table("agent", "id", "state", "harness", "model", "channels", "memory")
    for a in found:
        table.add_row(
            a["name"],
            a["id"],
            "[green]running[/green]" if a["running"] else "[dim]stopped[/dim]",
            a["harness"],
            a["model"] or "",
            ", ".join(a["channels"]),
            a["memory"] or "",
        )
    out.print(table)


@app.command()
def delete(
    name: Annotated[str, typer.Argument(help="The agent to delete.")],
    yes: YesOpt = False,
    files: Annotated[bool, typer.Option("--files", help="Delete its files folder (Home) too.")] = False,
) -> None:
    """Delete an agent: everything Link keeps for it here. Its files are kept unless --files; its bucket stays."""
    from lnk.tooldefs import remove_own_tools

    found = agent(name)
    kept = "" if files else " Its files folder (Home) is kept."
    confirm(f"Delete {name} ({found.id}) and everything Link keeps for it here?{kept}", yes, f"Deleting {name}")
    stop_services(found)
    lay = found.layout
    remove_own_tools(lay, found.id)
    for folder in (found.config.root, found.run.root, lay.net(found.id)):
        shutil.rmtree(folder, ignore_errors=True)
    root = found.folder.root
    if not files and found.folder.home.exists():
        aside = lay.agents / ".kept" / f"{name}-{found.id}"
        aside.mkdir(parents=True, exist_ok=True)
        shutil.move(str(found.folder.home), str(aside / "Home"))
        say(f"Its files are kept in {aside / 'Home'}.")
    shutil.rmtree(root, ignore_errors=True)
    say(f"{name} deleted.")
    if found.settings.bucket:
        # Deleting an agent is often a mistake found a day later: its backups stay.
        say(
            f"Its backups stay in {found.settings.bucket}: `lnk agent restore {name} --from {found.settings.bucket}`"
            f" brings it back; `lnk bucket delete {name} --from {found.settings.bucket}` deletes them."
        )


@app.command()
def logs(
    name: AgentArg = DEFAULT_AGENT,
    lines: Annotated[int, typer.Option("--lines", "-n", help="How many lines from the end.")] = 50,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing what's written.")] = False,
    bridge: Annotated[str | None, typer.Option("--bridge", help="A channel's bridge log instead.")] = None,
    tools: Annotated[bool, typer.Option("--tools", help="The tool calls' log instead.")] = False,
) -> None:
    """An agent's log: its harness and services (the scheduler's answers that reached no chat among
    them), a channel's bridge, or every tool call."""
    found = agent(name)
    file = found.logs / ("tools.log" if tools else f"bridge-{bridge}.log" if bridge else "agent.log")
    if not file.exists():
        say(f"Nothing logged yet at {file}.")
        return
    with file.open(errors="replace") as handle:
        for line in handle.readlines()[-lines:] if lines > 0 else []:
            sys.stdout.write(line)
        sys.stdout.flush()
        while follow:
            line = handle.readline()
            if line:
                sys.stdout.write(line)
                sys.stdout.flush()
            else:
                time.sleep(0.2)


@app.command()
def chat(
    name: AgentArg = DEFAULT_AGENT,
    message: Annotated[
        list[str] | None, typer.Option("--message", "-m", help="Send this and print the answer (may repeat).")
    ] = None,
) -> None:
    """Talk to the agent in the terminal, as its owner. Starts it first when it isn't running."""
    import asyncio

    from lnk.chat import Chat

    found, _ = load_or_create(layout(), name)
    if running(found) is None:
        from lnk.prepare import StartOptions

        found = start_agent(name, StartOptions())
    spec = read_spec(found)
    assert spec is not None
    raise typer.Exit(asyncio.run(Chat.of(found, spec, err).run(list(message or []))))


def _needs_of(found: Agent, harness: Harness) -> Needs:
    from lnk.harness_settings import harness_settings

    described = harness.description(found.layout, found.port)
    return harness.needs(harness.env(found.port, harness_settings(found, harness)), described)


@app.command()
def use(
    harness: Annotated[str, typer.Argument(help="The harness: link, openclaw, hermes, deepseek, or lnk-<name>.")],
    name: AgentArg = DEFAULT_AGENT,
    yes: YesOpt = False,
    allow_unsandboxed: UnsandboxedOpt = False,
) -> None:
    """Switch the agent to another harness, asking first for anything it needs beyond the current one."""
    from link_plugin.harness import Needs
    from lnk.harness_settings import harness_settings
    from lnk.harnesses import harness_of
    from lnk.known import DEFAULT_HARNESS
    from lnk.sandboxing import ask_needs

    found = agent(name)
    current = found.settings.harness or DEFAULT_HARNESS
    new = harness_of(found, harness)
    if new.name == current:
        say(f"{name} already runs {current}.")
        return
    needs = _needs_of(found, new)
    try:
        before = _needs_of(found, harness_of(found, current))
    except LinkError:
        before = Needs()
    had = {n.name for n in before.permissions} | {r.name for r in before.risks}
    wider = [(n.name, n.why) for n in needs.permissions if n.name not in had]
    wider += [(r.name, r.why) for r in needs.risks if r.name not in had]
    for need, why in wider:
        say(f"[yellow]{new.name} needs {need} beyond {current}: {why}[/yellow]")
    port = found.port
    described = new.description(found.layout, port)
    spoken = set(new.channels(new.env(port, harness_settings(found, new)), described))
    carried = new.endpoint(port, described) is not None
    silent = [ch for ch in found.settings.channels if not carried and ch not in spoken]
    if silent:
        say(
            f"[yellow]{new.name} doesn't speak {', '.join(silent)}: they stop answering until you switch back.[/yellow]"
        )
    if wider:
        decision = ask_needs(found, new.name, needs, yes=yes, allow_unsandboxed=allow_unsandboxed)
        refused = {need for need, _ in wider} & set(decision.denied)
        if refused:
            raise LinkError(f"{name} stays on {current}: {', '.join(sorted(refused))} was not allowed.")
        if not decision.asked:
            confirm(f"Switch {name} to {new.name}, with what it needs beyond {current}?", yes, f"Switching {name}")
    was_running = running(found) is not None
    found = found.with_settings(harness=new.name)
    found.save()
    say(f"{name} now runs {new.name}.")
    if was_running:
        restart_as_before(found)


@app.command()
def approvals(name: AgentArg = DEFAULT_AGENT, as_json: JsonOpt = False) -> None:
    """Tool calls waiting for your yes or no."""
    from lnk import control

    found = agent(name)
    if running(found) is None:
        raise LinkError(f"{name} isn't running, so nothing waits.")
    waiting = control.waiting(found)
    if as_json:
        emit([q.model_dump(mode="json") for q in waiting])
        return
    if not waiting:
        say("Nothing waits for you.")
    for q in waiting:
        out.print(f"{q.id}  {q.tool} wants to run {q.call} with {q.arguments}")


@app.command()
def approve(
    question: Annotated[str, typer.Argument(help="The waiting call's ID (lnk agent approvals).")],
    name: AgentArg = DEFAULT_AGENT,
    deny: Annotated[bool, typer.Option("--deny", help="Refuse it instead.")] = False,
) -> None:
    """Answer a tool call that waits for you."""
    from lnk import control

    found = agent(name)
    if running(found) is None or not control.answer(found, question, not deny):
        raise LinkError(f"No call {question!r} waits for {name}.", f"`lnk agent approvals {name}` lists them.")
    say("Refused." if deny else "Allowed.")


@app.command()
def schedules(name: AgentArg = DEFAULT_AGENT, as_json: JsonOpt = False) -> None:
    """What the agent has scheduled (Link Scheduler), soonest first."""
    from lnk import scheduler

    listed = scheduler.schedules(agent(name)).schedules
    if as_json:
        emit([item.model_dump(mode="json") for item in listed])
        return
    if not listed:
        say(f"{name} has nothing scheduled.")
    for item in listed:
        repeat = f"  [dim]{item.repeat}[/dim]" if item.repeat else ""
        out.print(f"{item.id}  {_local(item.at)}{repeat}  {item.title or item.text[:60]}", highlight=False)


@app.command()
def cancel(
    schedule: Annotated[str, typer.Argument(help="The schedule's ID (lnk agent schedules).")],
    name: AgentArg = DEFAULT_AGENT,
) -> None:
    """Cancel one of the agent's schedules: it is said no more."""
    from lnk import scheduler

    scheduler.cancel(agent(name), schedule)
    say("Cancelled.")


@app.command(hidden=True)
def supervise(
    name: Annotated[str, typer.Argument()],
    part: Annotated[list[str] | None, typer.Option("--part")] = None,
) -> None:
    """Run the agent's services, as `python -m lnk.supervisor` does (a unit an older lnk wrote runs this)."""
    from lnk.supervisor import main as run_services

    raise typer.Exit(run_services([name, *(a for p in part or [] for a in ("--part", p))]))
