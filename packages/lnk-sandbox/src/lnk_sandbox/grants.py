"""The two layers of grants, each in its own file, and the machine's switch over both.

The agent's (`~/.config/lnk/agents/<agent>/sandbox.toml`) follows it to any harness: permissions
by name, named tcp endpoints, its host list, and which Home folders stay read-only. The harness's
(`~/.config/lnk/harnesses/<harness>.toml`) holds only what the harness asked for and the answers
given, kept with the needs they answered. A line the sandbox can't enforce is refused, naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from link_plugin.errors import LinkError
from link_plugin.files import SettingsError, line_of, load_toml, read_toml, write_atomic
from link_plugin.layout import HOME_FOLDERS, Layout
from link_plugin.permissions import NAMES, Permission
from link_plugin.sandbox import ANY_HOST, Grants
from link_plugin.settings import AgentSettings, MachineSettings
from lnk_sandbox.hosts import BadHost, normal_host, parse_pattern
from lnk_sandbox.permissions import effective
from lnk_sandbox.rules import Endpoint
from lnk_sandbox.standing import Standing, named


def _known(names: list[str], known: Iterable[str], what: str) -> list[str]:
    for name in names:
        if name not in known:
            raise ValueError(f"{name!r} is not {what} (they are: {', '.join(sorted(known))})")
    return names


def _permission_names(names: list[str]) -> list[str]:
    return _known(names, NAMES, "a permission")


class FilesGrant(BaseModel):
    model_config = ConfigDict(extra="forbid")

    read: list[str] = Field(default_factory=list)
    """Home folders kept read-only, e.g. ["instructions"]."""

    @field_validator("read")
    @classmethod
    def _home_folders(cls, names: list[str]) -> list[str]:
        return _known(names, HOME_FOLDERS, "a folder of Home")


class AgentGrants(BaseModel):
    """sandbox.toml: what you granted the agent, whichever harness runs it."""

    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    tcp: list[str] = Field(default_factory=list)
    hosts: list[str] | None = None
    """None: any host. An empty list: none."""
    files: FilesGrant = Field(default_factory=FilesGrant)

    @field_validator("allow", "deny")
    @classmethod
    def _permissions(cls, names: list[str]) -> list[str]:
        names = _permission_names(names)
        if Permission.UNSANDBOXED in names:
            raise ValueError(
                "no sandbox is not the agent's grant: it is a harness's (lnk agent <harness> allow unsandboxed) "
                "or one start's (lnk agent start --no-sandbox)"
            )
        return names

    @field_validator("tcp")
    @classmethod
    def _endpoints(cls, items: list[str]) -> list[str]:
        return [str(Endpoint.parse(item)) for item in items]

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, items: list[str] | None) -> list[str] | None:
        if items is None:
            return None
        hosts = []
        for item in items:
            try:
                hosts.append(parse_pattern(item))
            except BadHost as exc:
                raise ValueError(f"{exc} (write example.com, *.example.com, or * for any)") from None
        return hosts

    @property
    def permissions(self) -> set[str]:
        return effective(self.allow, self.deny)

    @property
    def endpoints(self) -> list[Endpoint]:
        return [Endpoint.parse(item) for item in self.tcp]


class HarnessGrants(BaseModel):
    """harnesses/<harness>.toml: what the harness asked for beyond the agent's grants, and the answers."""

    model_config = ConfigDict(extra="forbid")

    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    risks: list[str] = Field(default_factory=list)
    """Risks allowed."""
    risks_denied: list[str] = Field(default_factory=list)
    needs: dict[str, str] = Field(default_factory=dict)
    """Every need answered (a permission or a risk), with why, as the harness said it."""

    @field_validator("allow", "deny")
    @classmethod
    def _permissions(cls, names: list[str]) -> list[str]:
        return _permission_names(names)

    def answered(self, name: str) -> bool:
        return name in self.allow or name in self.deny or name in self.risks or name in self.risks_denied


_AGENT_HINT = (
    "sandbox.toml takes allow, deny, tcp, hosts and [files] read; remove that line "
    "(lnk agent allow and deny write this file)."
)
_HARNESS_HINT = (
    "A harness's grants file takes allow, deny, risks, risks_denied and [needs]; remove that line "
    "(lnk agent <harness> allow, deny and repermit write this file)."
)


def _refuse_unknown(path: Path, data: dict[str, Any], known: dict[str, set[str] | None], hint: str) -> None:
    """Refuse a key the sandbox doesn't enforce, naming its line: a grant that silently doesn't hold is worse."""
    text = path.read_text()
    for key, value in data.items():
        if key not in known:
            shown = f"[{key}]" if isinstance(value, dict) else f"`{key}`"
            line = line_of(text, (key,))
            where = f"{path}, line {line}" if line else str(path)
            raise SettingsError(f"{where}: {shown} is not a grant lnk's sandbox enforces.", hint)
        inner = known[key]
        if inner is not None and isinstance(value, dict):
            for sub in value:
                if sub not in inner:
                    line = line_of(text, (key, sub))
                    where = f"{path}, line {line}" if line else str(path)
                    raise SettingsError(f"{where}: [{key}] {sub} is not a grant lnk's sandbox enforces.", hint)


def load_agent(layout: Layout, agent: str) -> AgentGrants:
    path = layout.agent_config(named("agent", agent)).sandbox
    if not path.exists():
        return AgentGrants()
    _refuse_unknown(
        path, read_toml(path), {"allow": None, "deny": None, "tcp": None, "hosts": None, "files": {"read"}}, _AGENT_HINT
    )
    return load_toml(path, AgentGrants)


def load_harness(layout: Layout, harness: str) -> HarnessGrants:
    path = layout.harness_grants(named("harness", harness))
    if not path.exists():
        return HarnessGrants()
    known: dict[str, set[str] | None] = {name: None for name in HarnessGrants.model_fields}
    _refuse_unknown(path, read_toml(path), known, _HARNESS_HINT)
    return load_toml(path, HarnessGrants)


def _save(path: Path, header: str, model: BaseModel) -> None:
    body = tomli_w.dumps(model.model_dump(mode="json", exclude_defaults=True))
    write_atomic(path, f"{header}\n{body}")


def save_agent(layout: Layout, agent: str, grants: AgentGrants) -> None:
    _save(
        layout.agent_config(agent).sandbox,
        f"# {agent}'s grants, whichever harness runs it: lnk agent allow and deny change them.",
        grants,
    )


def save_harness(layout: Layout, harness: str, grants: HarnessGrants) -> None:
    _save(
        layout.harness_grants(harness),
        f"# What {harness} asked for beyond an agent's grants, and the answers given, for every agent here.",
        grants,
    )


def agent_settings(layout: Layout, agent: str) -> AgentSettings:
    path = layout.agent_config(named("agent", agent)).settings
    if not path.is_file():
        raise LinkError(f"There is no agent named {agent!r} here ({path} is missing).", "lnk agent list shows them.")
    return load_toml(path, AgentSettings)


def machine_forbids_unsandboxed(layout: Layout) -> bool:
    """unsandboxed = false in machine.toml: every way to run without a sandbox is refused."""
    if not layout.machine.is_file():
        return False
    return load_toml(layout.machine, MachineSettings).unsandboxed is False


def agents_running(layout: Layout, harness: str) -> list[str]:
    """The agents here whose settings name the harness: a harness's grant holds for each."""
    return [name for name in layout.agent_names() if agent_settings(layout, name).harness == harness]


# --- changing the agent's layer -------------------------------------------------------------


def parse_item(tokens: list[str]) -> tuple[str, str]:
    """`network` -> (permission, network); `tcp github.com:22` -> (tcp, ...); `host x` -> (host, x)."""
    words = " ".join(tokens).split()
    if len(words) == 1 and words[0] not in ("tcp", "host"):
        return "permission", words[0]
    if len(words) == 2 and words[0] in ("tcp", "host"):
        return words[0], words[1]
    raise LinkError(
        f"{' '.join(tokens)!r} is not something to allow or deny.",
        "Name a permission (network, developer-tools, open, read-home, localhost, lan), "
        "`tcp HOST:PORT`, or `host NAME`.",
    )


def change_agent(grants: AgentGrants, tokens: list[str], allow: bool) -> AgentGrants:
    """Allow or deny one item; each mirrors the other, so nothing is a one-way door."""
    kind, value = parse_item(tokens)
    data = grants.model_dump()
    if kind == "permission":
        gain, lose = ("allow", "deny") if allow else ("deny", "allow")
        data[lose] = [name for name in data[lose] if name != value]
        if value not in data[gain]:
            data[gain].append(value)
    elif kind == "tcp":
        try:
            endpoint = str(Endpoint.parse(value))
        except ValueError as exc:
            raise LinkError(str(exc)) from None
        data["tcp"] = [item for item in data["tcp"] if item != endpoint] + ([endpoint] if allow else [])
    else:
        host = normal_host(value)
        current = data["hosts"]
        if allow:
            data["hosts"] = (
                None if host == ANY_HOST else [*(current or []), *([] if host in (current or []) else [host])]
            )
        elif current is None:
            raise LinkError(
                f"The agent has no host list (it reaches any host), so there is no {host} to take off it.",
                "Allow the hosts it may reach first (lnk agent allow host NAME): then it reaches only those.",
            )
        else:
            data["hosts"] = [item for item in current if item != host]
    try:
        return AgentGrants.model_validate(data)
    except ValidationError as exc:
        raise LinkError(str(exc.errors()[0]["msg"]).removeprefix("Value error, ") + ".") from None


# --- what holds ------------------------------------------------------------------------------


def in_force(layout: Layout, agent: str, harness: str | None, *, os_mode: str) -> Grants:
    """The grants in force for the agent running the harness (or no harness)."""
    return Grants.model_validate(Standing.of(layout, agent, harness).in_force(os_mode))


# --- what a sandbox is built from (standing.py keeps it) -------------------------------------


def _settings_view(layout: Layout, agent: str) -> dict[str, Any]:
    settings = agent_settings(layout, agent)
    return {"id": settings.id, "owner": settings.owner}


def _agent_view(layout: Layout, agent: str) -> dict[str, Any]:
    mine = load_agent(layout, agent)
    return {
        "permissions": sorted(mine.permissions),
        "hosts": mine.hosts,
        "tcp": mine.tcp,
        "files_read": mine.files.read,
    }


def _harness_view(layout: Layout, harness: str) -> dict[str, Any]:
    theirs = load_harness(layout, harness)
    return {"allow": theirs.allow, "risks": theirs.risks}


def _machine_view(layout: Layout, _name: str) -> dict[str, Any]:
    return {"forbids_unsandboxed": machine_forbids_unsandboxed(layout)}


VIEWS: dict[str, Callable[[Layout, str], dict[str, Any]]] = {
    "settings": _settings_view,
    "agent": _agent_view,
    "harness": _harness_view,
    "machine": _machine_view,
}
"""What `standing.py` keeps of each file, checked here by its model."""


# --- changing the harness's layer ------------------------------------------------------------


def change_harness(
    layout: Layout, harness: str, kept: HarnessGrants, name: str, allow: bool, declared: dict[str, str]
) -> HarnessGrants:
    """Allow or deny a need the harness declares; anything else is the agent's to grant."""
    asked = {**kept.needs, **declared}
    if name not in asked:
        hint = (
            f"lnk agent allow {name} gives it to the agent, for whichever harness runs it."
            if name in NAMES and name != Permission.UNSANDBOXED
            else f"Only what {harness}'s needs name can be allowed or denied for it."
        )
        raise LinkError(f"{harness} doesn't ask for {name}.", hint)
    if allow and name == Permission.UNSANDBOXED and machine_forbids_unsandboxed(layout):
        raise LinkError(
            f"This machine forbids running without a sandbox (unsandboxed = false in {layout.machine}).",
            "No grant changes that.",
        )
    data = kept.model_dump()
    gain, lose = ("allow", "deny") if name in NAMES else ("risks", "risks_denied")
    if not allow:
        gain, lose = lose, gain
    data[lose] = [item for item in data[lose] if item != name]
    data[gain] = [*(item for item in data[gain] if item != name), name]
    data["needs"][name] = asked[name]
    return HarnessGrants.model_validate(data)


def repermit(kept: HarnessGrants, name: str | None) -> HarnessGrants:
    """Forget the answers (all, or one), so the harness's next start asks again."""
    if name is None:
        return HarnessGrants()
    if not kept.answered(name):
        raise LinkError(f"There is no answer about {name} to forget.")
    data = kept.model_dump()
    for key in ("allow", "deny", "risks", "risks_denied"):
        data[key] = [item for item in data[key] if item != name]
    data["needs"].pop(name, None)
    return HarnessGrants.model_validate(data)
