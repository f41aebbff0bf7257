"""The first process inside a sandbox: Link's relays across its network namespace, then the command.

It runs with the modules built into the interpreter alone (`python -I -S relay.pyc ARGS`), as the
sandbox's PID 1, since it starts with every sandbox:

- for each `listen` pair (port, socket), it listens on the loopback inside and passes each
  connection on to a unix socket outside (the proxy, or a loopback port of this machine);
- for each `accept` pair (fd, port), it takes connections on a listening socket of this
  machine's loopback handed in by fd (the agent's own ports, published for the bridge) and
  passes each on to that port inside;
- the bytes of every connection it passes on are copied by the kernel, both ways, on its main
  thread (`Splicer`, which the proxy outside uses for its tunnels too, on a thread of its own);
- then it starts the command, passes on the signals it gets (each wakes the loop, so the
  command's end is seen at once), reaps whatever is orphaned, and
  ends with the command's exit code: once the command ended, what it left running (a server it
  started, as memory's session starts its engine) is asked to end (SIGTERM) and given a moment to
  clean up, since the sandbox's end kills whatever is left in it.

Everything is bound before the command starts, so the command never finds a relay missing.
"""

from __future__ import annotations

# Only modules built into the interpreter: the relay starts at every sandbox's start, and a module
# written in Python (socket's, signal's, json, threading, contextlib, even os, which `posix` is
# without its Python layer) costs its import there.
import _socket
import _thread
import fcntl
import posix
import select
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal  # the same functions, as typeshed knows them
    from collections.abc import Callable
else:
    import _signal

GRACE = 3.0
"""Seconds what the command left running has to end once it is asked to."""
SETTLE = 1.0
"""Seconds what they wrote last has, at most, to be passed on before the sandbox ends."""
FORWARDED = (
    _signal.SIGTERM,
    _signal.SIGINT,
    _signal.SIGHUP,
    _signal.SIGQUIT,
    _signal.SIGUSR1,
    _signal.SIGUSR2,
)
PIPE_SIZE = 1 << 20
"""Bytes a pipe holds: the most one splice moves, so a megabyte costs two system calls."""
SPARE_PIPES = 8
"""Empty pipes kept for the next transfer; more are closed."""
READ = select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR
WRITE = select.EPOLLOUT | select.EPOLLHUP | select.EPOLLERR
TCP = (_socket.AF_INET, _socket.AF_INET6)


class _ignored:
    """`contextlib.suppress`, without contextlib's imports at every sandbox's start."""

    def __init__(self, *kinds: type[BaseException]) -> None:
        self.kinds = kinds

    def __enter__(self) -> None:
        pass

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> bool:
        return kind is not None and issubclass(kind, self.kinds)


class _Way:
    """One direction of a pair: what `source` sends goes to `target`, through a pipe while it is in hand."""

    __slots__ = ("source", "target", "pipe", "held", "ended")

    def __init__(self, source: _socket.socket, target: _socket.socket) -> None:
        self.source = source
        self.target = target
        self.pipe: tuple[int, int] | None = None
        self.held = 0
        """Bytes in the pipe: read from the source, not yet taken by the target."""
        self.ended = False
        """The source said it sends no more."""


class Pair:
    """Two connections joined both ways, until both directions ended or either failed."""

    __slots__ = ("ways", "ended", "closed")

    def __init__(self, a: _socket.socket, b: _socket.socket, ended: Callable[[], object] | None) -> None:
        self.ways = (_Way(a, b), _Way(b, a))
        self.ended = ended
        self.closed = False


class Splicer:
    """Every joined pair's bytes, both ways, on one thread: the kernel copies them, Python only steers.

    Each direction goes socket to pipe to socket with splice(2), so its bytes never enter this
    process (a unix stream socket splices as a TCP one does). One epoll loop serves every pair, so
    a connection costs no thread. A direction reads only once its pipe is empty: at most a pipe's
    worth (1 MiB) is in hand, and a target that doesn't read holds its source back. Pipes are lent
    only while bytes are in them, so an idle connection holds none. Every TCP socket joined says
    TCP_NODELAY: a relay writes as it reads, and Nagle would hold a second small write (a
    request's body after its head) until the first is acknowledged, which a peer waiting for that
    body delays by 40 ms.

    The loop runs on a thread of its own (`start`, as the proxy runs it), or on the caller's, a
    turn at a time (`turn`, as the relay runs it beside its command, on its main thread).
    """

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._wake = posix.eventfd(0, posix.EFD_NONBLOCK | posix.EFD_CLOEXEC)
        self._epoll.register(self._wake, select.EPOLLIN)
        self._asked: list[tuple[Pair, bool]] = []
        """Pairs to join (True) or end (False), asked from any thread; list.append and pop are atomic."""
        self._fds: dict[int, tuple[Pair, _Way, _Way]] = {}
        """Each socket's fd: its pair, the direction it reads for, the direction it writes for."""
        self._masks: dict[int, int] = {}
        self._watched: dict[int, Callable[[], object]] = {}
        """Other fds the loop reads for whoever owns it (`watch`)."""
        self._spare: list[tuple[int, int]] = []
        self._settling: list[_thread.LockType] = []
        self._threaded = False

    def start(self) -> Splicer:
        """Run the loop on a thread of its own from now on."""
        self._threaded = True
        _thread.start_new_thread(self._run, ())
        return self

    def join(self, a: _socket.socket, b: _socket.socket, ended: Callable[[], object] | None = None) -> Pair:
        """Copy between `a` and `b` both ways from now on, and close both when done (then call `ended`,
        on this splicer's thread). The splicer owns both sockets from here."""
        for sock in (a, b):
            sock.setblocking(False)
            if sock.family in TCP:
                sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
            elif sock.family == _socket.AF_UNIX:
                # What a unix socket may have unread at its peer is its send buffer (208 KiB unless
                # told): a pipe's worth lets each splice move a megabyte. The kernel caps it at wmem_max.
                with _ignored(OSError):
                    sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_SNDBUF, PIPE_SIZE)
        pair = Pair(a, b, ended)
        self._ask(pair, True)
        return pair

    def end(self, pair: Pair) -> None:
        """Close a pair now, whatever it still holds."""
        self._ask(pair, False)

    def watch(self, fd: int, readable: Callable[[], object]) -> None:
        """Call `readable` on the loop's thread whenever `fd` has something to read. Only before
        the loop runs on a thread of its own, or from the loop's own thread."""
        self._watched[fd] = readable
        self._epoll.register(fd, select.EPOLLIN)

    def settle(self, timeout: float) -> None:
        """Wait until no socket has bytes waiting to be moved (or `timeout` seconds): what a program
        wrote just before it ended is passed on before this process ends."""
        if not self._threaded:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self.turn(0):
                pass
            return
        settled = _thread.allocate_lock()
        settled.acquire()
        self._settling.append(settled)
        posix.eventfd_write(self._wake, 1)
        settled.acquire(timeout=timeout)

    def _ask(self, pair: Pair, joining: bool) -> None:
        self._asked.append((pair, joining))
        posix.eventfd_write(self._wake, 1)

    def _run(self) -> None:
        while True:
            self.turn()
            if self._settling and not self._epoll.poll(0):
                while self._settling:
                    self._settling.pop().release()

    def turn(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds (None: until something happens) and do what is ready;
        whether anything was."""
        events = self._epoll.poll(-1 if timeout is None else timeout)
        for fd, mask in events:
            if fd == self._wake:
                self._answer()
                continue
            readable = self._watched.get(fd)
            if readable is not None:
                readable()
                continue
            found = self._fds.get(fd)
            if found is None:
                continue  # closed by an earlier event of this batch
            pair, reading, writing = found
            try:
                if mask & WRITE and writing.held:
                    self._flush(writing)
                if mask & READ and not reading.ended and not reading.held:
                    self._pump(reading)
                self._steer(pair)
            except OSError:  # a connection that failed ends its pair, never the splicer
                self._close(pair)
        return bool(events)

    def _answer(self) -> None:
        with _ignored(BlockingIOError):
            posix.eventfd_read(self._wake)
        while self._asked:
            pair, joining = self._asked.pop(0)
            if not joining:
                self._close(pair)
            elif not pair.closed:
                for way, back in (pair.ways, pair.ways[::-1]):
                    self._fds[way.source.fileno()] = (pair, way, back)
                try:
                    self._steer(pair)
                except OSError:
                    self._close(pair)

    def _pump(self, way: _Way) -> None:
        """Read what the source has, up to a pipe's worth, and pass on as much as the target takes."""
        way.pipe = way.pipe or self._lend()
        try:
            count = posix.splice(way.source.fileno(), way.pipe[1], PIPE_SIZE, flags=posix.SPLICE_F_NONBLOCK)
        except BlockingIOError:
            count = -1
        if count == 0:
            way.ended = True
        way.held += max(count, 0)
        self._flush(way)

    def _flush(self, way: _Way) -> None:
        """Write what the pipe holds; once it is empty, lend the pipe back, and end the target's
        writing when the source has ended."""
        assert way.pipe is not None
        while way.held:
            try:
                way.held -= posix.splice(way.pipe[0], way.target.fileno(), way.held, flags=posix.SPLICE_F_NONBLOCK)
            except BlockingIOError:
                return
        self._give_back(way.pipe)
        way.pipe = None
        if way.ended:
            way.target.shutdown(_socket.SHUT_WR)

    def _steer(self, pair: Pair) -> None:
        """Watch each socket for what its directions wait on; close the pair once both ended."""
        if all(way.ended and not way.held for way in pair.ways):
            self._close(pair)
            return
        for way, back in (pair.ways, pair.ways[::-1]):
            fd = way.source.fileno()
            mask = (0 if way.ended or way.held else select.EPOLLIN) | (select.EPOLLOUT if back.held else 0)
            known = self._masks.get(fd, 0)
            if mask == known:
                continue
            if not mask:
                # Unwatched rather than watched for nothing: a hang-up would be reported again and again.
                self._epoll.unregister(fd)
                del self._masks[fd]
                continue
            if known:
                self._epoll.modify(fd, mask)
            else:
                self._epoll.register(fd, mask)
            self._masks[fd] = mask

    def _close(self, pair: Pair) -> None:
        if pair.closed:
            return
        pair.closed = True
        for way in pair.ways:
            fd = way.source.fileno()
            self._fds.pop(fd, None)
            if self._masks.pop(fd, 0):
                with _ignored(OSError):
                    self._epoll.unregister(fd)
            if way.pipe is not None:
                # Still holding bytes: a pipe is lent again only empty.
                for end in way.pipe:
                    posix.close(end)
                way.pipe = None
            way.source.close()
        if pair.ended is not None:
            pair.ended()

    def _lend(self) -> tuple[int, int]:
        if self._spare:
            return self._spare.pop()
        read, write = posix.pipe2(posix.O_NONBLOCK | posix.O_CLOEXEC)
        with _ignored(OSError):  # a user past their pipe allowance gets the default size
            fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        return read, write

    def _give_back(self, pipe: tuple[int, int]) -> None:
        if len(self._spare) < SPARE_PIPES:
            self._spare.append(pipe)
            return
        for end in pipe:
            posix.close(end)


def _serve(listener: _socket.socket, connect: tuple[int, str | tuple[str, int]], splicer: Splicer) -> None:
    """Each connection `listener` takes, joined to a new one to `connect`: on a thread of its own, so
    a slow connect holds back only this listener's next connection."""
    family, address = connect
    while True:
        try:
            fd, _ = listener._accept()  # type: ignore[attr-defined]  # socket.accept's own, on the C type
        except OSError:
            return
        client = _socket.socket(fileno=fd)
        upstream = _socket.socket(family, _socket.SOCK_STREAM)
        try:
            upstream.connect(address)
        except OSError:
            client.close()
            upstream.close()
            continue
        splicer.join(client, upstream)


def listen(port: int, target: str, splicer: Splicer) -> None:
    """Take connections on `port` of the loopback (IPv4, and IPv6 where there is one) and pass each
    on to the unix socket `target`."""
    for family, host in ((_socket.AF_INET, "127.0.0.1"), (_socket.AF_INET6, "::1")):
        try:
            listener = _socket.socket(family, _socket.SOCK_STREAM)
            listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
            listener.bind((host, port))
            listener.listen(128)
        except OSError:
            if family == _socket.AF_INET:
                raise
            continue
        _thread.start_new_thread(_serve, (listener, (_socket.AF_UNIX, target), splicer))


def accept(fd: int, port: int, splicer: Splicer) -> None:
    """Take connections on the listening socket `fd` and pass each on to `port` of the loopback."""
    posix.set_inheritable(fd, False)  # now, before the command starts: it never holds this machine's socket
    listener = _socket.socket(fileno=fd)
    _thread.start_new_thread(_serve, (listener, (_socket.AF_INET, ("127.0.0.1", port)), splicer))


def main(args: list[str]) -> None:
    """`args`: `listen PORT SOCKET` and `accept FD PORT` for each, then `--` and the command (as
    `bwrap.relay_arguments` writes them, outside, where this module isn't loaded at a start)."""
    splicer = Splicer()
    at = args.index("--")
    for index in range(0, at, 3):
        kind, first, second = args[index : index + 3]
        if kind == "listen":
            listen(int(first), second, splicer)
        else:
            accept(int(first), int(second), splicer)
    argv = args[at + 1 :]
    # A signal wakes the loop: the command's end (SIGCHLD) is seen at once, between two splices.
    woken, wake = posix.pipe2(posix.O_NONBLOCK | posix.O_CLOEXEC)
    _signal.set_wakeup_fd(wake, warn_on_full_buffer=False)
    splicer.watch(woken, lambda: posix.read(woken, 512))
    _signal.signal(_signal.SIGCHLD, lambda _number, _frame: None)  # caught, so that it wakes the loop
    try:
        # Python ignores SIGPIPE and SIGXFSZ for itself: the command gets them as any program does
        # (a signal this process catches is at its default in the command, as exec leaves it).
        child = posix.posix_spawnp(argv[0], argv, posix.environ, setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))
    except OSError as exc:
        print(f"lnk-sandbox: can't run {argv[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        posix._exit(127 if isinstance(exc, FileNotFoundError) else 126)

    def passed_on(number: int, _frame: object) -> None:
        with _ignored(OSError):
            posix.kill(child, number)

    for number in FORWARDED:
        _signal.signal(number, passed_on)
    while (code := _reaped(child)) is None:
        splicer.turn()
    _end_the_rest(splicer)
    splicer.settle(SETTLE)
    sys.stdout.flush()
    posix._exit(code if code >= 0 else 128 - code)


def _reaped(child: int) -> int | None:
    """Reap whatever ended (the sandbox's PID 1 inherits every orphan); the command's exit code once it ended."""
    while True:
        try:
            pid, status = posix.waitpid(-1, posix.WNOHANG)
        except ChildProcessError:
            return None
        if pid == 0:
            return None
        if pid == child:
            return posix.waitstatus_to_exitcode(status)


def _end_the_rest(splicer: Splicer) -> None:
    """Ask every other process of the sandbox to end, and reap them, for up to GRACE seconds, passing
    on what they write meanwhile."""
    if posix.getpid() != 1:
        return  # only the sandbox's PID 1 may signal everything it sees: that is the sandbox alone
    try:
        posix.kill(-1, _signal.SIGTERM)
    except ProcessLookupError:
        return  # nothing was left
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline:
        try:
            pid, _ = posix.waitpid(-1, posix.WNOHANG)
        except ChildProcessError:
            return  # every one ended
        if pid == 0:
            splicer.turn(0.02)


if __name__ == "__main__":
    main(sys.argv[1:])
