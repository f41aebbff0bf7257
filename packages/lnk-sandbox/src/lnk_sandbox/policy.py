"""One policy from a request and the grants, whichever OS renders it (bubblewrap or Seatbelt).

What a sandbox shows: the system read-only, its home and the agent's folders as the grants say,
never Link's settings folder, never another agent's folder. What it reaches: its proxy (rules
from the grants), the loopback ports it is given, or, with lan, the network as it is.

Every folder a policy shows beyond the system is opened here, once, without following a link
(`folders.py`), and checked as opened: a policy holds descriptors, and is closed once the sandbox
holds them (`with policy:`).
"""

from __future__ import annotations

import functools
import marshal
import os
import sys
from collections.abc import Iterable, Mapping
from importlib.machinery import SourceFileLoader
from importlib.util import MAGIC_NUMBER
from pathlib import Path

from link_plugin.errors import LinkError
from link_plugin.layout import HOME_FOLDERS, AgentFolder, Layout
from link_plugin.permissions import Permission
from link_plugin.records import NamedTuple
from link_plugin.sandbox_terms import ANY_HOST, PROXY_PORT, proxy_url
from lnk_sandbox import standing
from lnk_sandbox.folders import Folders, Opened
from lnk_sandbox.request import Request
from lnk_sandbox.rules import Endpoint, Rules
from lnk_sandbox.standing import Standing

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
TOOLCHAINS = ("/usr/local", "/opt", "/snap", "/nix")
HOME_TOOLCHAINS = (".cargo/bin", ".rustup", ".pyenv", ".nvm", ".local/share/uv/python")
"""Toolchains kept in a home, shown read-only with developer-tools even without read-home."""

TYPE_CHECKING = False  # `typing` isn't loaded on a run's path (link_plugin.records)
if TYPE_CHECKING:
    from typing import Literal

    from link_plugin.sandbox_terms import Mode

    Access = Literal["ro", "rw", "hide"]


class Bind(NamedTuple):
    path: Path
    """Where it shows inside: where it was found outside."""
    access: Access
    fd: int | None = None
    """What is shown: the file or folder as opened once, without following a link (None for a hide)."""

    @classmethod
    def of(cls, opened: Opened, access: Access) -> Bind:
        return cls(opened.path, access, opened.fd)


class Policy(NamedTuple):
    mode: Mode
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    home: Path
    binds: list[Bind]
    """Beyond the system: read-only, read-write, and what is hidden even under a visible folder."""
    interpreter: list[Bind]
    """The relay's Python (its program, standard library and shared library), read-only."""
    namespace: bool
    """A network of its own, crossed only by the relays (False with lan)."""
    rules: Rules | None
    """The proxy's rules (this machine's addresses are added as the proxy starts); None: no proxy."""
    proxy_port: int
    forwards: list[int]
    """Loopback ports of this machine reachable inside at the same port (a model server's)."""
    publish: list[int]
    """The agent's own ports inside, published on this machine's loopback for the bridge."""
    developer_tools: bool
    desktop: bool
    read_home: Path | None
    folders: Folders
    """Every descriptor the binds hold, closed with the policy."""

    def access(self, access: Access) -> list[Path]:
        return [bind.path for bind in self.binds if bind.access == access]

    def fds(self) -> list[int]:
        """What bubblewrap is handed (`pass_fds`): every bind's descriptor."""
        return [bind.fd for bind in (*self.binds, *self.interpreter) if bind.fd is not None]

    def close(self) -> None:
        self.folders.close()

    def __enter__(self) -> Policy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def interpreter_paths() -> list[Path]:
    """What running this Python needs beyond the system: its program, standard library, shared library."""
    paths = [Path(sys.executable).resolve(), Path(os.__file__).resolve().parent]
    shared = _shared_library()
    if shared is not None:
        paths.append(shared)
    return paths


def _shared_library() -> Path | None:
    """This Python's shared library (None: it is built without one). On Linux, the one this process
    has loaded, as `/proc/self/maps` names it (resolved): asking `sysconfig` loads the build's whole
    configuration, a millisecond of every start. Elsewhere, where the build put it."""
    try:
        with open("/proc/self/maps") as maps:
            mapped = maps.read()
    except OSError:
        import sysconfig

        if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
            return None
        shared = Path(str(sysconfig.get_config_var("LIBDIR"))) / str(sysconfig.get_config_var("INSTSONAME"))
        return shared.resolve() if shared.exists() else None
    name = f"libpython{sys.version_info.major}.{sys.version_info.minor}"
    for line in mapped.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/") and os.path.basename(fields[5]).startswith(name):
            # One replaced since it was loaded is named "(deleted)": the relay loads the new one.
            path = fields[5].removesuffix(" (deleted)")
            return Path(path) if os.path.exists(path) else None
    return None


def interpreter() -> str:
    return str(Path(sys.executable).resolve())


@functools.cache
def source_of(module: str) -> str:
    """A module of this package that runs inside a sandbox with the standard library alone (`-I -S -c`)."""
    return Path(__file__).with_name(f"{module}.py").read_text()


def compiled(module: str) -> bytes:
    """A module of this package that runs inside a sandbox (`python -I -S FILE.pyc`), as the bytes
    of a .pyc file, which Python runs as it runs the source, without compiling it first. The code
    comes through the import system: the bytecode written when the package was installed (checked
    against the source as an import checks it), or the source compiled now."""
    name = f"lnk_sandbox.{module}"
    code = SourceFileLoader(name, str(Path(__file__).with_name(f"{module}.py"))).get_code(name)
    return MAGIC_NUMBER + bytes(12) + marshal.dumps(code)


def within(path: Path, folder: Path) -> bool:
    """Whether `path` is `folder` or under it, name by name (`folder in path.parents`, without making
    each parent a Path: a run asks this some hundreds of times)."""
    return path.parts[: len(folder.parts)] == folder.parts


def _beneath(path: Path, roots: Iterable[Path]) -> tuple[str, ...] | None:
    """The names of `path` under the first root it is spelled under; None: under none of them."""
    for root in roots:
        if within(path, root):
            return path.relative_to(root).parts
    return None


HOLDERS = ("Harnesses", "Memory")
"""An agent's folders holding folders of their own, each shown on its own: never written whole."""


def _a_whole_folder(given: Path, names: tuple[str, ...], writes: bool) -> None:
    """In the agents' root a sandbox is shown whole folders only: the agent's folder or one of its
    folders (`Home`, `chats`, `Home/work`, `Harnesses/<harness>`, `Memory/<engine>`, or another it
    keeps beside them), never one inside a folder a sandbox may write. So no sandbox can rename
    any folder on the way to one another sandbox is shown: a sandbox that writes `Home` has its
    four folders bound again over themselves (`Context.pinned`), and no sandbox writes a folder that
    holds others (the agent's own, `Harnesses`, `Memory`)."""
    depth = len(names)
    if writes and (depth == 1 or (depth == 2 and names[1] in HOLDERS)):
        raise LinkError(
            f"{given} holds folders each sandbox is shown on its own: a sandbox writes them one by one.",
            "Name the folder it writes (Home, chats, Home/work, ...).",
        )
    named = depth == 3 and (names[1] in HOLDERS or (names[1] == "Home" and names[2] in HOME_FOLDERS))
    if depth > 3 or (depth == 3 and not named):
        raise LinkError(
            f"{given} is inside a folder a sandbox may write: a sandbox is shown that folder whole, never "
            "a folder inside it.",
            "Name the agent's folder that holds it (Home, chats, Home/work, ...).",
        )


class Context:
    """What a policy is built from: the layout, the agent's settings, both layers of grants, the environment."""

    def __init__(self, layout: Layout, standing: Standing, environ: Mapping[str, str]) -> None:
        self.layout = layout
        self.agent = agent = standing.agent
        self.standing = standing
        self.environ = environ
        self.folder: AgentFolder = layout.agent(agent)
        self.config_root = layout.config.resolve()
        self.agents_root = layout.agents.resolve()
        self.own_root = self.agents_root / agent
        self.folders = Folders()
        """What the policy opens; it closes them."""

    @property
    def permissions(self) -> frozenset[str]:
        return self.standing.permissions | frozenset(self.standing.harness_allow)

    @property
    def user_home(self) -> Path:
        return Path(self.environ.get("HOME") or Path.home())

    def _in_agents(self, path: Path) -> tuple[str, ...] | None:
        """Its names under the agents' root, however the root is spelled (as set, or resolved)."""
        return _beneath(path, (Path(os.path.abspath(self.layout.agents)), self.agents_root))

    def checked(self, path: str | Path, mode: Mode, writes: bool) -> Opened:
        """A path a request names, opened once, and refused where it would show what no sandbox may see.

        In the agents' root it is walked from the root following no link; elsewhere the user's links
        are followed once to the real folder, which is opened following none and must not lie in
        the agents' root (a way in there is walked from its root, by its own names)."""
        given = Path(path)
        if not given.is_absolute():
            raise LinkError(f"The sandbox is given {str(path)!r}, which isn't an absolute path.")
        if ".." in given.parts:
            raise LinkError(f"The sandbox is given {given}, which has '..' in it: name the folder itself.")
        names = self._in_agents(given)
        if names is not None:
            opened = self.folders.beneath(self.agents_root, names)
        else:
            opened = self.folders.resolved(given)
            if within(opened.path, self.agents_root):
                raise LinkError(
                    f"{given} leads into the agents' folder through a symbolic link: the sandbox follows none there.",
                    f"Name the folder by its own path in {self.layout.agents}.",
                )
        return self._judged(given, opened, mode, writes)

    def _judged(self, given: Path, opened: Opened, mode: Mode, writes: bool) -> Opened:
        """The checks, on where the opened folder is."""
        real = opened.path
        if within(real, self.config_root) or (writes and within(self.config_root, real)):
            raise LinkError(
                f"{given} would show Link's settings folder ({self.layout.config}) to a sandbox: no sandbox sees it."
            )
        if writes and within(self.agents_root, real):
            raise LinkError(f"{given} would let a sandbox write every agent's folder.")
        if within(real, self.agents_root):
            if real == self.agents_root:
                raise LinkError(f"{given} would show every agent's folder: an agent's sandbox never shows another's.")
            if not within(real, self.own_root) and not (mode == "tool" and self.same_owner(real)):
                raise LinkError(f"{given} is another agent's folder: an agent's sandbox never shows another's.")
            if mode != "tool" and within(real, self.own_root / "Memory"):
                raise LinkError(f"{given} is memory's state: no harness reaches it.")
            _a_whole_folder(given, real.relative_to(self.agents_root).parts, writes)
        return opened

    def same_owner(self, path: Path) -> bool:
        """Whether a path is in the folder of an agent of this one's owner: one memory engine serves all
        of an owner's agents, so its sandbox may hold their folders together, never another owner's."""
        name = path.relative_to(self.agents_root).parts[0]
        return standing.owner_of(self.layout, name) == self.standing.owner

    def own(self, path: Path, mode: Mode) -> Opened:
        """One of the agent's own folders, made when missing (each folder in its opened parent),
        opened following no link, and checked like any other."""
        names = self._in_agents(path)
        if names is None:
            raise LinkError(f"{path} isn't in the agents' folder {self.layout.agents}.")
        return self._judged(path, self.folders.beneath(self.agents_root, names, make=True), mode, writes=False)

    def opened(self, path: Path) -> Opened:
        """A path Link shows besides the request's (a toolchain, the home, the desktop's sockets, the
        relay's Python), opened once; never one inside Link's settings or the agents' folder."""
        opened = self.folders.resolved(path)
        if any(within(opened.path, root) for root in (self.config_root, self.agents_root)):
            raise LinkError(
                f"{path} leads into Link's own folders ({opened.path}), which a sandbox is shown only as its "
                "grants say.",
                "Move the toolchain or program out of Link's folders.",
            )
        return opened

    def pinned(self, home: Opened) -> list[Bind]:
        """An agent's Home written whole: its four folders bound again over themselves, so this sandbox
        can neither rename nor replace them (a folder a mount shows can't be moved from under it),
        and every other sandbox finds them where they are."""
        names = home.path.relative_to(self.agents_root).parts
        return [Bind.of(self.folders.beneath(self.agents_root, [*names, n], make=True), "rw") for n in HOME_FOLDERS]

    def is_home(self, path: Path) -> bool:
        """Whether a folder is an agent's Home."""
        names = _beneath(path, (self.agents_root,))
        return names is not None and len(names) == 2 and names[1] == "Home"


def _home_binds(ctx: Context, writes: list[Path], mode: Mode) -> list[Bind]:
    """Home and chats/: Home wholly writable for a harness that writes it, else folder by folder."""
    folder = ctx.folder
    home = ctx.own(folder.home, mode)
    chats = ctx.own(folder.chats, mode)
    binds = [Bind.of(chats, "rw" if chats.path in writes else "ro")]
    if home.path in writes:
        return [*binds, Bind.of(home, "rw"), *ctx.pinned(home)]
    binds.append(Bind.of(home, "ro"))
    for name in HOME_FOLDERS:
        sub = ctx.own(folder.home / name, mode)
        binds.append(Bind.of(sub, "ro" if name in ctx.standing.files_read else "rw"))
    return binds


def _toolchains(ctx: Context, with_home: bool) -> list[Path]:
    found = [Path(path) for path in TOOLCHAINS if Path(path).is_dir()]
    if with_home:
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
    from lnk_sandbox.hosts import normal_host  # the grammar: loaded only for a list to read

    listed = tuple(normal_host(host) for host in hosts)
    return None if ANY_HOST in listed else listed


class _Network(NamedTuple):
    namespace: bool = True
    rules: Rules | None = None
    forwards: tuple[int, ...] = ()
    publish: tuple[int, ...] = ()


def _network(request: Request, ctx: Context) -> _Network:
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
            hosts=_hosts(ctx.standing.hosts),
            endpoints=frozenset(Endpoint.parse(item) for item in ctx.standing.tcp),
            loopback_ports=frozenset([*request.ports, *model]),
        )
        return _Network(rules=rules, forwards=tuple(model), publish=tuple(request.ports))
    if request.mode == "setup":
        hosts = request.hosts if request.hosts is not None else ctx.standing.hosts
        return _Network(rules=Rules(hosts=_hosts(hosts), setup=request.hosts is not None))
    if request.mode == "health":
        return _Network(forwards=tuple(request.ports))
    return _Network(forwards=tuple(model))


def build(request: Request, ctx: Context, *, macos: bool = False) -> Policy:
    """The policy for a request, its folders opened; nothing stays open when it fails."""
    try:
        return _build(request, ctx, macos)
    except BaseException:
        ctx.folders.close()
        raise


def _build(request: Request, ctx: Context, macos: bool) -> Policy:
    mode = request.mode
    permissions = ctx.permissions
    writes = [ctx.checked(path, mode, writes=True) for path in request.writes]
    written = {opened.path for opened in writes}
    reads = [ctx.checked(path, mode, writes=False) for path in request.reads]
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
        harness_home = ctx.own(ctx.folder.harness_home(request.harness), mode)
        home = harness_home.path
        binds += [Bind.of(harness_home, "rw"), *_home_binds(ctx, list(written), mode)]
    shown = {bind.path for bind in binds}
    for opened in writes:
        if opened.path not in shown:
            binds += [Bind.of(opened, "rw"), *(ctx.pinned(opened) if ctx.is_home(opened.path) else [])]
    binds += [Bind.of(opened, "ro") for opened in reads if opened.path not in written | shown]

    read_home = None
    if Permission.READ_HOME in permissions and mode != "tool":
        opened_home = ctx.opened(ctx.user_home)
        read_home = opened_home.path
        binds.append(Bind.of(opened_home, "ro"))
    developer_tools = Permission.DEVELOPER_TOOLS in permissions and mode != "tool"
    if developer_tools:
        # With read-home the home's toolchains show through it already: no folder bound inside another.
        toolchains = _toolchains(ctx, with_home=read_home is None)
        binds += [Bind.of(ctx.opened(path), "ro") for path in toolchains if not path.is_relative_to("/usr")]
    elif not macos:
        binds.append(Bind(Path("/usr/local"), "hide"))
    env = {"PATH": DEFAULT_PATH, **request.env, "HOME": str(home), "TMPDIR": "/tmp"}
    desktop = Permission.OPEN in permissions and mode == "harness"
    if desktop:
        paths, desktop_env = desktop_session(ctx.environ, ctx.user_home)
        binds += [Bind.of(ctx.opened(path), "ro") for path in paths]
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
        interpreter=[Bind.of(ctx.opened(path), "ro") for path in interpreter_paths()],
        namespace=network.namespace,
        rules=network.rules,
        proxy_port=proxy_port,
        forwards=list(network.forwards),
        publish=list(network.publish),
        developer_tools=developer_tools,
        desktop=desktop,
        read_home=read_home,
        folders=ctx.folders,
    )
