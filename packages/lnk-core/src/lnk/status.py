"""What `lnk agent status` and `lnk agent list` say of an agent, as one dict for JSON and for text.

`list` reads only settings and whether each agent runs: what `status` asks beyond that (the
control socket's client, the channels' and the sandbox's plugins, the schedules) is imported
where `details` runs, so a `list` doesn't pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from link_plugin.errors import LinkError
from lnk.agents import Agent
from lnk.known import DEFAULT_HARNESS
from lnk.services import running

if TYPE_CHECKING:
    from lnk.runstate import PartState, RunSpec


def _provider(model: str | None) -> str | None:
    from link_plugin.providers import provider_of

    if not model:
        return None
    try:
        return provider_of(model)
    except LinkError:
        return None


def summary(agent: Agent) -> dict[str, Any]:
    """What `list` shows: the settings, and whether it runs."""
    settings = agent.settings
    return {
        "name": agent.name,
        "id": agent.id,
        "owner": settings.owner,
        "running": running(agent) is not None,
        "harness": settings.harness or DEFAULT_HARNESS,
        "model": settings.model,
        "ports": settings.ports,
        "channels": sorted(settings.channels),
        "memory": settings.memory,
    }


def _grants(agent: Agent, harness: str) -> dict[str, Any] | None:
    """Every widening the agent holds, running or not, with or without a sandbox this start: they
    are kept in its grants files and hold at every sandboxed start. None: lnk-sandbox isn't
    installed yet, so none can have been made (status never installs it)."""
    from lnk.plugins import find
    from lnk.sandboxing import SANDBOX, grants

    if find(SANDBOX) is None:
        return None
    try:
        return grants(agent, harness).model_dump(mode="json")
    except LinkError as exc:
        return {"error": exc.message}


def _schedules(agent: Agent) -> list[dict[str, Any]] | str:
    """The agent's pending schedules, soonest first, or why they can't be listed."""
    from lnk import scheduler

    try:
        return [item.model_dump(mode="json") for item in scheduler.schedules(agent).schedules]
    except LinkError as exc:
        return exc.message


def _live(agent: Agent) -> dict[str, Any] | None:
    """What the running agent's services say of themselves, over its control socket."""
    from lnk import control

    return control.status(agent)


def _channels(agent: Agent, spec: RunSpec | None, bridges: PartState | None) -> dict[str, Any]:
    """Each connected channel: who it is, and its bridge's state while the agent runs."""
    from lnk.channels import ChannelEntry

    channels: dict[str, Any] = {}
    for name in sorted(agent.settings.channels):
        entry = ChannelEntry.of(agent, name)
        child = bridges.children.get(f"bridge:{name}") if bridges else None
        carried = spec is not None and name in spec.bridges
        channels[name] = {
            "title": entry.title,
            "identity": entry.identity,
            "bridge": (child.state if child else "starting") if carried else None,
            "restarts": child.restarts if child else 0,
        }
    return channels


def details(agent: Agent) -> dict[str, Any]:
    """What `status` shows: the summary, and what the running services say of themselves."""
    from lnk.models import keys_wired
    from lnk.runstate import read_spec, read_state
    from lnk.tooldefs import tools_for

    found = summary(agent)
    harness_state = running(agent)
    spec = read_spec(agent) if harness_state is not None else None
    bridges = read_state(agent.run.state("bridges")) if harness_state is not None else None
    live = _live(agent) if harness_state is not None else None
    found["provider"] = _provider(agent.settings.model)
    found["sandbox"] = None if spec is None else ("sandboxed" if spec.sandboxed else "none")
    found["endpoint"] = spec.endpoint.url if spec and spec.endpoint else None
    found["since"] = harness_state.started if harness_state else None
    harness_child = harness_state.children.get("harness") if harness_state else None
    found["process"] = harness_child.model_dump(mode="json") if harness_child else None
    found["channels"] = _channels(agent, spec, bridges) if agent.settings.channels else {}
    found["memory"] = {
        "engine": agent.settings.memory,
        "tool": f"memory-{agent.id}" if agent.settings.memory else None,
        "indexed": live.get("memory") if live else None,
    }
    found["tools"] = sorted(spec.tool_urls) if spec else [t.name for t in tools_for(agent.layout, agent.name)]
    found["waiting"] = live.get("waiting", 0) if live else 0
    found["schedules"] = _schedules(agent)
    found["keys_wired"] = keys_wired(agent.settings)
    found["grants"] = _grants(agent, found["harness"])
    if spec is not None and spec.sandboxed and found["grants"] and "mode" in found["grants"]:
        found["sandbox"] = found["grants"]["mode"]  # bubblewrap, seatbelt: how this machine sandboxes it
    return found
