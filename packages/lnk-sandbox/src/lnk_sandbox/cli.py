"""`lnk-sandbox`: what the core asks of the sandbox (contract-spec/sandbox.md)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from link_plugin.answers import Answer, parse_answer
from link_plugin.contract import CONTRACT_VERSION, Contract, Kind
from link_plugin.errors import LinkError
from link_plugin.harness import Needs
from link_plugin.layout import Layout
from link_plugin.sandbox import SandboxRequest
from lnk_sandbox import __version__, asking, grants, permissions
from lnk_sandbox.check import check
from lnk_sandbox.entry import failed
from lnk_sandbox.grants import agent_settings
from lnk_sandbox.policy import DEFAULT_PATH
from lnk_sandbox.request import Request
from lnk_sandbox.runner import Sandbox, refused, run_request

PASSED = ("TERM", "LANG", "LC_ALL", "COLORTERM")
"""What `run --agent` takes from the terminal it runs in."""

Agent = Annotated[str, typer.Option(help="The agent's name.")]
Harness = Annotated[str, typer.Option(help="The harness's name.")]
SomeHarness = Annotated[str | None, typer.Option("--harness", help="The harness whose grants apply (its settings').")]
AsJson = Annotated[bool, typer.Option("--json", help="Answer in JSON.")]
Item = Annotated[list[str], typer.Argument(help="A permission, `tcp HOST:PORT` or `host NAME`.")]
Need = Annotated[str, typer.Argument(help="A need or risk the harness declares.")]
NeedsNow = Annotated[Path | None, typer.Option("--needs", help="The harness's `needs` answer now, as JSON.")]

app = typer.Typer(
    name="lnk-sandbox",
    help="The sandbox for lnk agents: policies, the proxy, grants and needs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
harness_app = typer.Typer(help="A harness's own grants: only what its needs ask for.", no_args_is_help=True)
app.add_typer(harness_app, name="harness")


def _fail(exc: LinkError) -> NoReturn:
    raise typer.Exit(failed(exc))


def _answering(call: Callable[[], Answer | str], as_json: bool = True) -> None:
    """Run a command: its answer as JSON on stdout (or a line for a person), or the error it met."""
    try:
        result = call()
    except LinkError as exc:
        _fail(exc)
    if isinstance(result, Answer) and as_json:
        print(result.to_json())
    elif isinstance(result, str):
        print(result)


def _layout() -> Layout:
    return Layout.from_env()


@app.command()
def contract() -> None:
    """The sandbox's kind, name and the contract version it speaks."""
    _answering(lambda: Contract(kind=Kind.SANDBOX, version=CONTRACT_VERSION, name="sandbox", release=__version__))


def _request_from(
    agent: str, harness: str | None, mode: str, command: list[str], writes: list[Path], reads: list[Path]
) -> SandboxRequest:
    settings = agent_settings(_layout(), agent)
    env = {name: os.environ[name] for name in PASSED if name in os.environ} | {"PATH": DEFAULT_PATH}
    return SandboxRequest.model_validate(
        {
            "agent": agent,
            "mode": mode,
            "harness": harness or settings.harness,
            "argv": command,
            "env": env,
            "cwd": None,
            "writes": [str(path.absolute()) for path in writes],
            "reads": [str(path.absolute()) for path in reads],
        }
    )


@app.command(context_settings={"allow_interspersed_args": False})
def run(
    command: Annotated[list[str] | None, typer.Argument(help="The command to run, after --.")] = None,
    request: Annotated[Path | None, typer.Option(help="A SandboxRequest JSON file (what the core writes).")] = None,
    agent: Annotated[str | None, typer.Option(help="Run as this agent, under its harness's policy.")] = None,
    harness: SomeHarness = None,
    mode: Annotated[str, typer.Option(help="harness, tool, setup or health.")] = "harness",
    write: Annotated[list[Path] | None, typer.Option(help="A folder it may write besides its home.")] = None,
    read: Annotated[list[Path] | None, typer.Option(help="A folder it may read besides the defaults.")] = None,
) -> None:
    """Run a command in the agent's sandbox, with a proxy of its own; end with the command's code."""
    if request is not None and not (agent or command):
        raise typer.Exit(run_request(request, _layout()))
    try:
        if request is not None:
            raise LinkError("Give either --request FILE or --agent NAME -- COMMAND, not both.")
        if not (agent and command):
            raise LinkError("Nothing to run.", "Give --request FILE, or --agent NAME -- COMMAND...")
        asked = _request_from(agent, harness, mode, command, write or [], read or [])
        code = Sandbox(Request.of(asked), _layout()).run()
    except (LinkError, ValueError) as exc:
        raise typer.Exit(refused(exc)) from None
    raise typer.Exit(code)


@app.command("check")
def check_command(
    agent: Agent,
    harness: SomeHarness = None,
    as_json: AsJson = False,
) -> None:
    """Try each permission from inside the agent's sandbox and say what is open."""
    try:
        found = check(_layout(), agent, harness, os.environ)
    except LinkError as exc:
        _fail(exc)
    if as_json:
        print(found.to_json())
        return
    for name, is_open in found.results.items():
        print(f"{name:16} {'open' if is_open else 'closed':7} {found.details.get(name, '')}".rstrip())


@app.command()
def needs(
    agent: Agent,
    harness: Harness,
    needs_file: Annotated[Path, typer.Option("--needs", help="The harness's `needs` answer, as JSON.")],
    yes: Annotated[bool, typer.Option(help="Allow what it needs without asking (never no sandbox).")] = False,
    allow_unsandboxed: Annotated[bool, typer.Option(help="Allow its need for no sandbox.")] = False,
) -> None:
    """Ask the owner, in a terminal, for what a harness needs beyond what was answered before."""

    def decide() -> Answer:
        wanted = _needs(needs_file)
        return asking.decide(
            _layout(),
            agent,
            harness,
            wanted,
            terminal=asking.Terminal.attached(),
            yes=yes,
            allow_unsandboxed=allow_unsandboxed,
        )

    _answering(decide)


def _needs(path: Path) -> Needs:
    try:
        text = path.read_text()
    except OSError as exc:
        raise LinkError(f"The needs file {path} can't be read ({exc.strerror}).") from None
    return parse_answer(Needs, text, source=f"the needs in {path}")


def _change_agent(agent: str, item: list[str], allow: bool, as_json: bool) -> None:
    layout = _layout()

    def change() -> Answer | str:
        agent_settings(layout, agent)
        updated = grants.change_agent(grants.load_agent(layout, agent), item, allow)
        grants.save_agent(layout, agent, updated)
        if as_json:
            return grants.in_force(layout, agent, None, os_mode=permissions.sandbox_mode())
        return f"{agent}: {' '.join(item)} {'allowed' if allow else 'denied'}."

    _answering(change)


def _agent_command(allow: bool) -> Callable[..., None]:
    def command(item: Item, agent: Agent, as_json: AsJson = False) -> None:
        _change_agent(agent, item, allow, as_json)

    command.__doc__ = f"{'Allow' if allow else 'Deny'} the agent something, whichever harness runs it."
    return command


app.command("allow")(_agent_command(True))
app.command("deny")(_agent_command(False))


def _change_harness(harness: str, item: str, allow: bool, needs_file: Path | None) -> None:
    layout = _layout()

    def change() -> str:
        declared = {}
        if needs_file is not None:
            wanted = _needs(needs_file)
            declared = {n.name: n.why for n in wanted.permissions} | {r.name: r.why for r in wanted.risks}
        kept = grants.load_harness(layout, harness)
        grants.save_harness(layout, harness, grants.change_harness(layout, harness, kept, item, allow, declared))
        return f"{harness}: {item} {'allowed' if allow else 'denied'}, for every agent here that runs it."

    _answering(change)


def _harness_command(allow: bool) -> Callable[..., None]:
    def command(item: Need, harness: Harness, needs_file: NeedsNow = None) -> None:
        _change_harness(harness, item, allow, needs_file)

    command.__doc__ = f"{'Allow' if allow else 'Deny'} a need the harness declares, for every agent here running it."
    return command


harness_app.command("allow")(_harness_command(True))
harness_app.command("deny")(_harness_command(False))


@harness_app.command("repermit")
def harness_repermit(
    harness: Harness,
    item: Annotated[str | None, typer.Argument(help="One answer to forget; all of them without it.")] = None,
) -> None:
    """Forget the answers given for a harness, so its next start asks again."""
    layout = _layout()

    def forget() -> str:
        grants.save_harness(layout, harness, grants.repermit(grants.load_harness(layout, harness), item))
        return f"{harness}: {'the answer about ' + item if item else 'every answer'} forgotten; its next start asks."

    _answering(forget)


@app.command("grants")
def grants_command(
    agent: Agent,
    harness: SomeHarness = None,
    as_json: AsJson = False,
) -> None:
    """The grants in force for the agent (running the harness)."""
    layout = _layout()

    def in_force() -> Answer | str:
        agent_settings(layout, agent)
        found = grants.in_force(layout, agent, harness, os_mode=permissions.sandbox_mode())
        if as_json:
            return found
        lines = [f"{name:16} {'on' if on else 'off'}" for name, on in found.permissions.items()]
        lines.append(f"hosts            {', '.join(found.hosts) if found.hosts is not None else 'any'}")
        lines += [f"tcp              {endpoint}" for endpoint in found.tcp]
        lines += [f"warning: {warning}" for warning in found.warnings]
        return "\n".join(lines)

    _answering(in_force)


@app.command("permissions")
def permissions_command(as_json: bool = typer.Option(False, "--json")) -> None:
    """This OS's permissions, each as it works here."""
    listing = permissions.listing()
    if as_json:
        print(listing.to_json())
        return
    for info in listing.permissions:
        print(f"{info.name:16} {'on' if info.on_by_default else 'off':4} {info.what}")


def main() -> None:
    app()
