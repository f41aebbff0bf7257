"""Running a request: the policy, its own proxy and relays, the sandbox, and the command's exit code.

Each run gets a proxy of its own, on sockets in a folder of its own under the agent's
`.net/<id>/`, so `lnk agent run` beside a running agent never disturbs the agent's. Without a
sandbox it runs only where a grant says so by name and the machine doesn't forbid it; a missing
bubblewrap is refused with how to install it, never a reason to run without.
"""

from __future__ import annotations

# The Python of `socket`, `signal`, `subprocess` and `threading` isn't imported on a run's path:
# what it costs at every start is more than all the work of a start (`spawn.py`).
import _socket
import _thread
import contextlib
import functools
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import FrameType

from link_plugin.errors import LinkError
from link_plugin.layout import Layout
from lnk_sandbox import bwrap, seccomp
from lnk_sandbox.policy import Context, Policy, build, compiled
from lnk_sandbox.request import Request
from lnk_sandbox.spawn import spawn
from lnk_sandbox.standby import Standby
from lnk_sandbox.standing import Standing
from lnk_sandbox.trust import Trust

TYPE_CHECKING = False  # `typing` isn't loaded on a run's path (link_plugin.records)
if TYPE_CHECKING:
    import signal as _signal  # the same functions, as typeshed knows them
    import socket
    from typing import TextIO

    from link_plugin.sandbox import SandboxRequest
    from lnk_sandbox.proxy import ConnectionLog, Network, Proxy, Served
    from lnk_sandbox.spawn import Stream
else:
    import _signal

REFUSED = 125
"""`run` ends with this when the sandbox refused or failed before the command ran; stderr says why."""
FORWARDED = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)
USERNS_HINT = (
    "bubblewrap needs user namespaces. Where they are restricted (Ubuntu 23.10 and later), give bwrap "
    "an AppArmor profile of its own allowing them (`userns,`) rather than turning the rule off for every "
    "program with sysctl."
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunFolder:
    """net/<id>/<mode>-<pid>-<random>/: this run's sockets, removed when it ends."""

    def __init__(self, net: Path, mode: str) -> None:
        self.net = net
        self.root = net / f"{mode}-{os.getpid()}-{os.urandom(3).hex()}"

    @property
    def sockets(self) -> Path:
        return self.root / "out"

    def __enter__(self) -> RunFolder:
        self.net.mkdir(parents=True, exist_ok=True, mode=0o700)
        for stale in self.net.iterdir():
            parts = stale.name.split("-")
            if stale.is_dir() and len(parts) == 3 and parts[1].isdigit() and not _alive(int(parts[1])):
                _remove(stale)
        self.sockets.mkdir(parents=True, mode=0o700)
        return self

    def __exit__(self, *exc: object) -> None:
        _remove(self.root)


def _remove(root: Path) -> None:
    """A run folder gone: its sockets and `out/` the quick way, anything else as shutil removes it."""
    out = root / "out"
    with contextlib.suppress(OSError):
        for entry in os.scandir(out):
            os.unlink(entry.path)
        out.rmdir()
    with contextlib.suppress(FileNotFoundError):
        try:
            root.rmdir()
        except OSError:
            import shutil

            shutil.rmtree(root, ignore_errors=True)


def _publish(port: int) -> _socket.socket:
    """A listening socket on this machine's loopback for one of the agent's ports, handed inside."""
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as exc:
        listener.close()
        raise LinkError(
            f"Port {port} of this machine's loopback is taken ({exc.strerror}): the agent's port can't be published.",
            "Stop what listens there, or give the agent other ports.",
        ) from None
    listener.listen(128)
    return listener


@contextlib.contextmanager
def _passed_on(target: int, child: list[int]) -> Iterator[None]:
    """Signals to this process go to the sandbox's first process (or, before bubblewrap has said
    which it is, to `target`), which passes them to the command. Only the main thread has
    signals: a run on another thread (a test's) passes none on."""

    def handler(number: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            os.kill(child[0] if child else target, number)

    previous = {}
    try:
        for number in FORWARDED:
            previous[number] = _signal.signal(number, handler)
    except ValueError:  # not the main thread: nothing was set
        pass
    try:
        yield
    finally:
        for number, old in previous.items():
            _signal.signal(number, old)


def _wait(pid: int) -> int:
    """The exit code of `pid`, as `subprocess` says it: negative for the signal that ended it."""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def run_request(path: Path, layout: Layout) -> int:
    """`run --request FILE`: the command's exit code, or REFUSED with why on stderr."""
    try:
        try:
            text = path.read_bytes()
        except OSError as exc:
            raise LinkError(f"The request {path} can't be read ({exc.strerror}).") from None
        return Sandbox(Request.read(text, source=f"the request {path}"), layout).run()
    except (LinkError, ValueError) as exc:  # ValueError: a path the OS can't take (a NUL in it)
        return refused(exc)


def refused(exc: Exception) -> int:
    """Why the sandbox refused, on stderr (stdout stays the command's); REFUSED to end with."""
    print(f"lnk-sandbox: {exc}", file=sys.stderr)
    return REFUSED


class Sandbox:
    """One run of a request, as `lnk-sandbox run` does it."""

    def __init__(
        self,
        request: Request | SandboxRequest,
        layout: Layout,
        *,
        environ: Mapping[str, str] | None = None,
        network: Network | None = None,
        stdin: Stream = None,
        stdout: Stream = None,
        stderr: Stream = None,
        echo: TextIO | None = None,
    ) -> None:
        self.request = request if isinstance(request, Request) else Request.of(request)
        self.layout = layout
        self.standing = Standing.of(layout, self.request.agent, self.request.harness)
        """An unknown agent stops here; everything that runs is keyed by the agent's ID (its proxy's sockets)."""
        self.agent_id = self.standing.id
        self.environ = dict(os.environ if environ is None else environ)
        self.network = network
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.echo = echo if echo is not None else sys.stderr

    def policy(self) -> Policy:
        """The request's policy, its folders open (`with` it to close them)."""
        context = Context(self.layout, self.standing, self.environ)
        try:
            return build(self.request, context, macos=sys.platform == "darwin")
        except OSError as exc:
            raise LinkError(f"The sandbox couldn't be made: {exc.strerror} ({exc.filename}).") from None

    def unsandboxed(self) -> bool:
        """Whether this run goes without a sandbox, which only a grant by name or --no-sandbox asks."""
        request = self.request
        if request.mode == "tool":
            if request.no_sandbox:
                raise LinkError("A tool outside the harness's sandbox always runs in a sandbox of its own.")
            return False
        asked = request.no_sandbox or (request.mode == "harness" and self.standing.unsandboxed_by_grant)
        if asked and self.standing.forbids_unsandboxed:
            raise LinkError(
                f"{request.harness or request.agent} would run without a sandbox, and this machine forbids it "
                f"(unsandboxed = false in {self.layout.machine}).",
                "Run a harness that works in a sandbox; a grant made earlier doesn't change this.",
            )
        return asked

    def run(self) -> int:
        if self.unsandboxed():
            return self._bare()
        with self.policy() as policy:
            if sys.platform == "darwin":
                return self._seatbelt(policy)
            return self._bubblewrap(policy)

    def _bare(self) -> int:
        who = self.request.harness or self.request.agent
        print(f"lnk-sandbox: {who} runs without a sandbox: it reads and writes all you can.", file=self.echo)
        env = {**self.environ, **self.request.env}
        import subprocess

        try:
            process = subprocess.Popen(
                self.request.argv,
                env=env,
                cwd=self.request.cwd,
                stdin=self.stdin,
                stdout=self.stdout,
                stderr=self.stderr,
            )
        except OSError as exc:
            raise LinkError(f"Can't run {self.request.argv[0]}: {exc.strerror}.") from None
        with _passed_on(process.pid, []):
            return process.wait()

    def _proxy(self, policy: Policy, trust: Trust | None) -> Proxy | None:
        """The run's proxy (None: the policy has none), with this machine's addresses as they are now."""
        if policy.rules is None:
            return None
        from link_plugin.keys import KeyStore
        from lnk_sandbox.addresses import this_machine
        from lnk_sandbox.proxy import Network, Proxy, ProxySettings

        request = self.request
        config = self.layout.agent_config(request.agent)
        rules = policy.rules._replace(this_machine=policy.rules.this_machine | this_machine())
        return Proxy(
            ProxySettings(
                rules=rules,
                port=policy.proxy_port,
                log=self.log(),
                tools_socket=self.layout.tools_socket(self.agent_id) if request.mode == "harness" else None,
                tools=frozenset(request.tools) if request.tools is not None else None,
                keys=KeyStore(config.keys) if request.wire_keys and request.mode == "harness" else None,
                upstreams=self.environ,
                network=self.network or Network(),
                trust=trust,
            )
        )

    def log(self) -> ConnectionLog:
        from lnk_sandbox.proxy import ConnectionLog

        return ConnectionLog(self.layout.agent_config(self.request.agent).root / "proxy.log", echo=self.echo)

    def _standby(self, policy: Policy, folder: RunFolder) -> Standby:
        """The proxy's socket and each forward's, answered once the first connection comes. What
        the proxy reads from outside that a sandbox might reach (a CA file) is read now, before
        the sandbox starts."""
        trust = Trust(self.environ) if policy.rules is not None else None
        names = (["proxy"] if policy.rules is not None else []) + [f"port-{port}" for port in policy.forwards]
        paths = [folder.sockets / f"{name}.sock" for name in names]
        return Standby(paths, functools.partial(self._serve, policy, trust), echo=self.echo)

    def _serve(self, policy: Policy, trust: Trust | None, sockets: list[socket.socket]) -> Served:
        from lnk_sandbox.proxy import Served, forward

        served = Served()
        proxy = self._proxy(policy, trust)
        handlers = [proxy.handle] if proxy is not None else []
        handlers += [functools.partial(forward, port, self.log()) for port in policy.forwards]
        for sock, handler in zip(sockets, handlers, strict=True):
            served.listening(sock, handler)
        return served.start()

    def _bubblewrap(self, policy: Policy) -> int:
        program = bwrap.bwrap()
        with RunFolder(self.layout.net(self.agent_id), policy.mode) as folder, self._standby(policy, folder):
            listeners = [_publish(port) for port in policy.publish] if policy.namespace else []
            info_read, info_write = os.pipe()
            relay = _memory_file("lnk-relay", compiled("relay"))
            filtered = _memory_file("lnk-seccomp", seccomp.program())
            plumbing = bwrap.Plumbing(
                relay_fd=relay,
                seccomp_fd=filtered,
                sockets=folder.sockets if policy.rules is not None or policy.forwards else None,
                accept=[(listener.fileno(), port) for listener, port in zip(listeners, policy.publish, strict=True)],
                info_fd=info_write,
            )
            # The options go through a file of their own: no other user reads them in `ps`.
            options = bwrap.options(policy, plumbing)
            arguments = _memory_file("lnk-bwrap-options", b"".join(os.fsencode(arg) + b"\0" for arg in options))
            try:
                process = spawn(
                    [program, "--args", str(arguments), "--", *bwrap.command(policy, plumbing)],
                    pass_fds=[
                        arguments,
                        relay,
                        filtered,
                        info_write,
                        *policy.fds(),
                        *(listener.fileno() for listener in listeners),
                    ],
                    streams=(self.stdin, self.stdout, self.stderr),
                )
            finally:
                for fd in (arguments, relay, filtered, info_write):
                    os.close(fd)
                policy.close()  # bubblewrap holds what it binds now
                for listener in listeners:
                    listener.close()
            child: list[int] = []
            read = _thread.allocate_lock()
            read.acquire()
            _thread.start_new_thread(_read_info, (info_read, child, read))
            with _passed_on(process, child):
                code = _wait(process)
            read.acquire(timeout=5)
        if not child and code != 0:
            raise LinkError("bubblewrap couldn't make the sandbox (its own message is above).", USERNS_HINT)
        return code

    def _seatbelt(self, policy: Policy) -> int:
        import subprocess

        from lnk_sandbox import seatbelt
        from lnk_sandbox.proxy import Served

        proxy = self._proxy(policy, Trust(self.environ))
        served = Served()
        if proxy is not None:
            served.tcp("127.0.0.1", policy.proxy_port, proxy.handle)
        with served:
            return subprocess.call(
                seatbelt.command(policy),
                env=seatbelt.environment(policy),
                cwd=policy.cwd,
                stdin=self.stdin,
                stdout=self.stdout,
                stderr=self.stderr,
            )


def _memory_file(name: str, data: bytes) -> int:
    """A file in memory holding `data`, read from the start by whoever it is handed to."""
    fd = os.memfd_create(name)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _read_info(fd: int, child: list[int], read: _thread.LockType) -> None:
    """bubblewrap says the sandbox's first process once it runs; nothing comes when it failed to
    start. `read` is released once bubblewrap closed its end."""
    data = b""
    try:
        with os.fdopen(fd, "rb", buffering=0) as stream:
            while chunk := stream.read(4096):
                data += chunk
                with contextlib.suppress(ValueError):
                    if not child:
                        child.append(int(json.loads(data)["child-pid"]))
    finally:
        read.release()
