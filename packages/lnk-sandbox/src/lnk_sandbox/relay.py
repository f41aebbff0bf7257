"""The first process inside a sandbox: Link's relays across its network namespace, then the command.

It runs with the standard library alone (`python -I -S -c <this file>`), as the sandbox's PID 1:

- for each `listen` pair (port, socket), it listens on the loopback inside and passes each
  connection on to a unix socket outside (the proxy, or a loopback port of this machine);
- for each `accept` pair (fd, port), it takes connections on a listening socket of this
  machine's loopback handed in by fd (the agent's own ports, published for the bridge) and
  passes each on to that port inside;
- the bytes of every connection it passes on are copied by the kernel, both ways, on one
  thread (`Splicer`, which the proxy outside uses for its tunnels too);
- then it starts the command, passes on the signals it gets, reaps whatever is orphaned, and
  ends with the command's exit code: once the command ended, what it left running (a server it
  started, as memory's session starts its engine) is asked to end (SIGTERM) and given a moment to
  clean up, since the sandbox's end kills whatever is left in it.

Everything is bound before the command starts, so the command never finds a relay missing.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import json
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable

GRACE = 3.0
"""Seconds what the command left running has to end once it is asked to."""
SETTLE = 1.0
"""Seconds what they wrote last has, at most, to be passed on before the sandbox ends."""
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
PIPE_SIZE = 1 << 20
"""Bytes a pipe holds: the most one splice moves, so a megabyte costs two system calls."""
SPARE_PIPES = 8
"""Empty pipes kept for the next transfer; more are closed."""
READ = select.EPOLLIN | select.EPOLLHUP | select.EPOLLERR
WRITE = select.EPOLLOUT | select.EPOLLHUP | select.EPOLLERR


class _Way:
    """One direction of a pair: what `source` sends goes to `target`, through a pipe while it is in hand."""

    __slots__ = ("source", "target", "pipe", "held", "ended")

    def __init__(self, source: socket.socket, target: socket.socket) -> None:
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

    def __init__(self, a: socket.socket, b: socket.socket, ended: Callable[[], object] | None) -> None:
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
    """

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._epoll.register(self._wake, select.EPOLLIN)
        self._asked: collections.deque[tuple[Pair, bool]] = collections.deque()
        self._fds: dict[int, tuple[Pair, _Way, _Way]] = {}
        """Each socket's fd: its pair, the direction it reads for, the direction it writes for."""
        self._masks: dict[int, int] = {}
        self._spare: list[tuple[int, int]] = []
        self._settling: list[threading.Event] = []

    def start(self) -> Splicer:
        threading.Thread(target=self._run, name="lnk-splice", daemon=True).start()
        return self

    def join(self, a: socket.socket, b: socket.socket, ended: Callable[[], object] | None = None) -> Pair:
        """Copy between `a` and `b` both ways from now on, and close both when done (then call `ended`,
        on this splicer's thread). The splicer owns both sockets from here."""
        for sock in (a, b):
            sock.setblocking(False)
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            elif sock.family == socket.AF_UNIX:
                # What a unix socket may have unread at its peer is its send buffer (208 KiB unless
                # told): a pipe's worth lets each splice move a megabyte. The kernel caps it at wmem_max.
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, PIPE_SIZE)
        pair = Pair(a, b, ended)
        self._ask(pair, True)
        return pair

    def end(self, pair: Pair) -> None:
        """Close a pair now, whatever it still holds."""
        self._ask(pair, False)

    def settle(self, timeout: float) -> None:
        """Wait until no socket has bytes waiting to be moved (or `timeout` seconds): what a program
        wrote just before it ended is passed on before this process ends."""
        settled = threading.Event()
        self._settling.append(settled)
        os.eventfd_write(self._wake, 1)
        settled.wait(timeout)

    def _ask(self, pair: Pair, joining: bool) -> None:
        self._asked.append((pair, joining))
        os.eventfd_write(self._wake, 1)

    def _run(self) -> None:
        while True:
            for fd, events in self._epoll.poll():
                if fd == self._wake:
                    self._answer()
                    continue
                found = self._fds.get(fd)
                if found is None:
                    continue  # closed by an earlier event of this batch
                pair, reading, writing = found
                try:
                    if events & WRITE and writing.held:
                        self._flush(writing)
                    if events & READ and not reading.ended and not reading.held:
                        self._pump(reading)
                    self._steer(pair)
                except OSError:  # a connection that failed ends its pair, never the splicer
                    self._close(pair)
            if self._settling and not self._epoll.poll(0):
                while self._settling:
                    self._settling.pop().set()

    def _answer(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(self._wake)
        while self._asked:
            pair, joining = self._asked.popleft()
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
            count = os.splice(way.source.fileno(), way.pipe[1], PIPE_SIZE, flags=os.SPLICE_F_NONBLOCK)
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
                way.held -= os.splice(way.pipe[0], way.target.fileno(), way.held, flags=os.SPLICE_F_NONBLOCK)
            except BlockingIOError:
                return
        self._give_back(way.pipe)
        way.pipe = None
        if way.ended:
            way.target.shutdown(socket.SHUT_WR)

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
                with contextlib.suppress(OSError):
                    self._epoll.unregister(fd)
            if way.pipe is not None:
                # Still holding bytes: a pipe is lent again only empty.
                for end in way.pipe:
                    os.close(end)
                way.pipe = None
            way.source.close()
        if pair.ended is not None:
            pair.ended()

    def _lend(self) -> tuple[int, int]:
        if self._spare:
            return self._spare.pop()
        read, write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        with contextlib.suppress(OSError):  # a user past their pipe allowance gets the default size
            fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        return read, write

    def _give_back(self, pipe: tuple[int, int]) -> None:
        if len(self._spare) < SPARE_PIPES:
            self._spare.append(pipe)
            return
        for end in pipe:
            os.close(end)


def _serve(listener: socket.socket, connect: tuple[int, str | tuple[str, int]], splicer: Splicer) -> None:
    family, address = connect
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        upstream = socket.socket(family, socket.SOCK_STREAM)
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
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            listener = socket.socket(family, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host, port))
            listener.listen(128)
        except OSError:
            if family == socket.AF_INET:
                raise
            continue
        connect = (socket.AF_UNIX, target)
        threading.Thread(target=_serve, args=(listener, connect, splicer), daemon=True).start()


def accept(fd: int, port: int, splicer: Splicer) -> None:
    """Take connections on the listening socket `fd` and pass each on to `port` of the loopback."""
    listener = socket.socket(fileno=fd)
    listener.set_inheritable(False)
    connect = (socket.AF_INET, ("127.0.0.1", port))
    threading.Thread(target=_serve, args=(listener, connect, splicer), daemon=True).start()


def main(arguments: list[str]) -> None:
    config = json.loads(arguments[0])
    splicer = Splicer().start()
    for port, target in config["listen"]:
        listen(int(port), str(target), splicer)
    for fd, port in config["accept"]:
        accept(int(fd), int(port), splicer)
    argv = [str(part) for part in config["argv"]]
    try:
        # Python ignores SIGPIPE and SIGXFSZ for itself: the command gets them as any program does.
        child = os.posix_spawnp(argv[0], argv, dict(os.environ), setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
    except OSError as exc:
        print(f"lnk-sandbox: can't run {argv[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)

    def passed_on(number: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(child, number)

    for number in FORWARDED:
        signal.signal(number, passed_on)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            _end_the_rest()
            splicer.settle(SETTLE)
            sys.stdout.flush()
            os._exit(code if code >= 0 else 128 - code)


def _end_the_rest() -> None:
    """Ask every other process of the sandbox to end, and reap them, for up to GRACE seconds."""
    if os.getpid() != 1:
        return  # only the sandbox's PID 1 may signal everything it sees: that is the sandbox alone
    try:
        os.kill(-1, signal.SIGTERM)
    except ProcessLookupError:
        return  # nothing was left
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # every one ended
        if pid == 0:
            time.sleep(0.02)


if __name__ == "__main__":
    main(sys.argv[1:])
