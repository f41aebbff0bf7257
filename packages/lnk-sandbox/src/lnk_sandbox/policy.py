"""One policy from a request and the grants, whichever OS renders it (bubblewrap or Seatbelt).

What a sandbox shows: the system read-only, its home and the agent's folders as the grants say,
never Link's settings folder, never another agent's folder. What it reaches: its proxy (rules
from the grants), the loopback ports it is given, or, with lan, the network as it is.
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal

from link_plugin.errors import LinkError
from link_plugin.files import load_toml
from link_plugin.layout import HOME_FOLDERS, AgentFolder, Layout
from link_plugin.permissions import Permission
from link_plugin.sandbox import ANY_HOST, PROXY_PORT, Mode, SandboxRequest, proxy_url
from link_plugin.settings import AgentSettings
from lnk_sandbox.addresses import this_machine
from lnk_sandbox.grants import AgentGrants, HarnessGrants, normal_host
from lnk_sandbox.rules import Rules

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
TOOLCHAINS = ("/usr/local", "/opt", "/snap", "/nix")
HOME_TOOLCHAINS = (".cargo/bin", ".rustup", ".pyenv", ".nvm", ".local/share/uv/python")
"""Toolchains kept in a home, shown read-only with developer-tools even without read-home."""

Access = Literal["ro", "rw", "hide"]


@dataclass(frozen=True)
class Bind:
    path: Path
    access: Access


@dataclass
class Policy:
    mode: Mode
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    home: Path
    binds: list[Bind]
    """Beyond the system: read-only, read-write, and what is hidden even under a visible folder."""
    interpreter: list[Path]
    """The relay's Python (its program, standard library and shared library), read-only."""
    namespace: bool
    """A network of its own, crossed only by the relays (False with lan)."""
    rules: Rules | None
    """The proxy's rules; None: no proxy."""
    proxy_port: int
    forwards: list[int] = field(default_factory=list)
    """Loopback ports of this machine reachable inside at the same port (a model server's)."""
    publish: list[int] = field(default_factory=list)
    """The agent's own ports inside, published on this machine's loopback for the bridge."""
    developer_tools: bool = True
    desktop: bool = False
    read_home: Path | None = None

    def access(self, access: Access) -> list[Path]:
        return [bind.path for bind in self.binds if bind.access == access]


def interpreter_paths() -> list[Path]:
    """What running this Python needs beyond the system: its program, standard library, shared library."""
    paths = [Path(sys.executable).resolve(), Path(os.__file__).resolve().parent]
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        shared = Path(str(sysconfig.get_config_var("LIBDIR"))) / str(sysconfig.get_config_var("INSTSONAME"))
        if shared.exists():
            paths.append(shared.resolve())
    return paths


def interpreter() -> str:
    return str(Path(sys.executable).resolve())


@functools.cache
def source_of(module: str) -> str:
    """A module of this package that runs inside a sandbox with the standard library alone (`-I -S -c`)."""
    return resources.files("lnk_sandbox").joinpath(f"{module}.py").read_text()


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


class Context:
    """What a policy is built from: the layout, the agent's settings, both layers of grants, the environment."""

    def __init__(
        self,
        layout: Layout,
        agent: str,
        settings: AgentSettings,
        grants: AgentGrants,
        harness_grants: HarnessGrants,
        environ: Mapping[str, str],
    ) -> None:
        self.layout = layout
        self.agent = agent
        self.settings = settings
        self.grants = grants
        self.harness_grants = harness_grants
        self.environ = environ
        self.folder: AgentFolder = layout.agent(agent)
        self.config_root = layout.config.resolve()
        self.agents_root = layout.agents.resolve()
        self.own_root = self.agents_root / agent

    @property
    def permissions(self) -> frozenset[str]:
        return frozenset(self.grants.permissions | set(self.harness_grants.allow))

    @property
    def user_home(self) -> Path:
        return Path(self.environ.get("HOME") or Path.home())

    def checked(self, path: str | Path, mode: Mode, writes: bool) -> Path:
        """A path a request names, refused where it would show what no sandbox may see."""
        given = Path(path)
        if not given.is_absolute():
            raise LinkError(f"The sandbox is given {str(path)!r}, which isn't an absolute path.")
        real = given.resolve()
        if not real.exists():
            raise LinkError(f"The sandbox is given {given}, which doesn't exist.")
        if _within(real, self.config_root) or (writes and _within(self.config_root, real)):
            raise LinkError(
                f"{given} would show Link's settings folder ({self.layout.config}) to a sandbox: no sandbox sees it."
            )
        if writes and _within(self.agents_root, real):
            raise LinkError(f"{given} would let a sandbox write every agent's folder.")
        if _within(real, self.agents_root):
            if not _within(real, self.own_root) and not (mode == "tool" and self.same_owner(real)):
                raise LinkError(f"{given} is another agent's folder: an agent's sandbox never shows another's.")
            if mode != "tool" and _within(real, self.own_root / "Memory"):
                raise LinkError(f"{given} is memory's state: no harness reaches it.")
            self.no_links(given)
        return real

    def same_owner(self, path: Path) -> bool:
        """Whether a path is in the folder of an agent of this one's owner: one memory engine serves all
        of an owner's agents, so its sandbox may hold their folders together, never another owner's."""
        name = path.relative_to(self.agents_root).parts[0]
        settings = self.layout.agent_config(name).settings
        if not settings.is_file():
            return False
        return load_toml(settings, AgentSettings).owner == self.settings.owner

    def no_links(self, path: Path) -> None:
        """Refuse a path in the agent's folder that goes through a symbolic link: one made from
        inside a sandbox would otherwise choose what the next sandbox shows."""
        lexical = Path(os.path.normpath(path))
        root = next((r for r in (self.layout.agents, self.agents_root) if _within(lexical, r)), None)
        here = self.agents_root
        parts = lexical.relative_to(root).parts if root is not None else ()
        for part in parts:
            here = here / part
            if here.is_symlink():
                break
        else:
            if root is not None:
                return
        raise LinkError(
            f"{path} goes through a symbolic link in the agent's folder: the sandbox follows none there.",
            "Put the folder back in place of the link (one made from inside a sandbox is refused).",
        )

    def own(self, path: Path, mode: Mode) -> Path:
        """One of the agent's own folders, made when missing, checked like any other."""
        self.no_links(path)
        path.mkdir(parents=True, exist_ok=True)
        return self.checked(path, mode, writes=False)


def _home_binds(ctx: Context, writes: list[Path], mode: Mode) -> list[Bind]:
    """Home and chats/: Home wholly writable for a harness that writes it, else folder by folder."""
    folder = ctx.folder
    home = ctx.own(folder.home, mode)
    chats = ctx.own(folder.chats, mode)
    binds = [Bind(chats, "rw" if chats in writes else "ro")]
    if home in writes:
        return [*binds, Bind(home, "rw")]
    binds.append(Bind(home, "ro"))
    for name in HOME_FOLDERS:
        sub = ctx.own(folder.home / name, mode)
        binds.append(Bind(sub, "ro" if name in ctx.grants.files.read else "rw"))
    return binds


def _toolchains(ctx: Context) -> list[Path]:
    found = [Path(path) for path in TOOLCHAINS if Path(path).is_dir()]
    found += [ctx.user_home / path for path in HOME_TOOLCHAINS if (ctx.user_home / path).is_dir()]
    return [path.resolve() for path in found]


def desktop_session(environ: Mapping[str, str], user_home: Path) -> tuple[list[Path], dict[str, str]]:
    """The display and session bus sockets, for open."""
    runtime = environ.get("XDG_RUNTIME_DIR")
    candidates = [Path("/tmp/.X11-unix"), Path(environ.get("XAUTHORITY") or user_home / ".Xauthority")]
    if runtime:
        candidates += [Path(runtime) / "bus", Path(runtime) / environ.get("WAYLAND_DISPLAY", "wayland-0")]
    names = ("DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS", "XAUTHORITY")
    return [path for path in candidates if path.exists()], {name: environ[name] for name in names if name in environ}


def _proxy_env(port: int, localhost: bool) -> dict[str, str]:
    url = proxy_url(port)
    # With localhost, loopback requests go through the proxy too: that is how they reach this machine.
    skip = "" if localhost else "localhost,127.0.0.1,::1"
    env = {"LNK_PROXY": url}
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        env[name] = env[name.upper()] = url
    env["no_proxy"] = env["NO_PROXY"] = skip
    return env


def _hosts(hosts: Iterable[str] | None) -> tuple[str, ...] | None:
    if hosts is None:
        return None
    listed = tuple(normal_host(host) for host in hosts)
    return None if ANY_HOST in listed else listed


@dataclass
class _Network:
    namespace: bool = True
    rules: Rules | None = None
    forwards: list[int] = field(default_factory=list)
    publish: list[int] = field(default_factory=list)


def _network(request: SandboxRequest, ctx: Context) -> _Network:
    """What each mode reaches: a harness its proxy (or, with lan, the network as it is), a setup step
    its adapter's hosts, the health check the agent's ports, a tool only a local model's port."""
    permissions = ctx.permissions
    model = [request.model_port] if request.model_port else []
    if request.mode == "harness" and Permission.LAN in permissions:
        return _Network(namespace=False)
    if request.mode == "harness":
        rules = Rules(
            internet=Permission.NETWORK in permissions,
            localhost=Permission.LOCALHOST in permissions,
            hosts=_hosts(ctx.grants.hosts),
            endpoints=frozenset(ctx.grants.endpoints),
            loopback_ports=frozenset([*request.ports, *model]),
            this_machine=this_machine(),
        )
        return _Network(rules=rules, forwards=model, publish=list(request.ports))
    if request.mode == "setup":
        hosts = request.hosts if request.hosts is not None else ctx.grants.hosts
        return _Network(rules=Rules(hosts=_hosts(hosts), this_machine=this_machine(), setup=request.hosts is not None))
    if request.mode == "health":
        return _Network(forwards=list(request.ports))
    return _Network(forwards=model)


def build(request: SandboxRequest, ctx: Context, *, macos: bool = False) -> Policy:
    mode = request.mode
    permissions = ctx.permissions
    extra_writes = [ctx.checked(path, mode, writes=True) for path in request.writes]
    extra_reads = [ctx.checked(path, mode, writes=False) for path in request.reads]
    proxy_port = request.proxy_port or PROXY_PORT
    if mode != "tool" and (proxy_port in request.ports or proxy_port == request.model_port):
        raise LinkError(
            f"Port {proxy_port} is the proxy's inside the sandbox, and the request gives it to the harness too.",
            "Give the harness other ports, or the proxy another (proxy_port).",
        )
    binds: list[Bind] = []
    if mode == "tool":
        home = Path("/tmp")
    else:
        if not request.harness:
            raise LinkError(f"A {mode} run names its harness (the request's `harness`).")
        home = ctx.own(ctx.folder.harness_home(request.harness), mode)
        binds += [Bind(home, "rw"), *_home_binds(ctx, extra_writes, mode)]
    binds += [Bind(path, "rw") for path in extra_writes]
    binds += [Bind(path, "ro") for path in extra_reads if path not in extra_writes]

    developer_tools = Permission.DEVELOPER_TOOLS in permissions and mode != "tool"
    if developer_tools:
        binds += [Bind(path, "ro") for path in _toolchains(ctx) if not path.is_relative_to("/usr")]
    elif not macos:
        binds.append(Bind(Path("/usr/local"), "hide"))
    read_home = ctx.user_home.resolve() if Permission.READ_HOME in permissions and mode != "tool" else None
    if read_home is not None:
        binds.append(Bind(read_home, "ro"))
    env = {"PATH": DEFAULT_PATH, **request.env, "HOME": str(home), "TMPDIR": "/tmp"}
    desktop = Permission.OPEN in permissions and mode == "harness"
    if desktop:
        paths, desktop_env = desktop_session(ctx.environ, ctx.user_home)
        binds += [Bind(path, "ro") for path in paths]
        env.update(desktop_env)
    binds += [Bind(ctx.config_root, "hide"), Bind(ctx.agents_root, "hide")]

    network = _network(request, ctx)
    if network.rules is not None:
        env.update(_proxy_env(proxy_port, network.rules.localhost))
    return Policy(
        mode=mode,
        argv=list(request.argv),
        env=env,
        cwd=Path(request.cwd) if request.cwd else home,
        home=home,
        binds=binds,
        interpreter=interpreter_paths(),
        namespace=network.namespace,
        rules=network.rules,
        proxy_port=proxy_port,
        forwards=network.forwards,
        publish=network.publish,
        developer_tools=developer_tools,
        desktop=desktop,
        read_home=read_home,
    )
