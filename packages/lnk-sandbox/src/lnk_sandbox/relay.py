"""The first process inside a sandbox: Link's relays across its network namespace, then the command.

It runs with the standard library alone (`python -I -S -c <this file>`), as the sandbox's PID 1:

- for each `listen` pair (port, socket), it listens on the loopback inside and passes each
  connection on to a unix socket outside (the proxy, or a loopback port of this machine);
- for each `accept` pair (fd, port), it takes connections on a listening socket of this
  machine's loopback handed in by fd (the agent's own ports, published for the bridge) and
  passes each on to that port inside;
- then it starts the command, passes on the signals it gets, reaps whatever is orphaned, and
  ends with the command's exit code: once the command ended, what it left running (a server it
  started, as memory's session starts its engine) is asked to end (SIGTERM) and given a moment to
  clean up, since the sandbox's end kills whatever is left in it.

Everything is bound before the command starts, so the command never finds a relay missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time

BUFFER = 256 * 1024
GRACE = 3.0
"""Seconds what the command left running has to end once it is asked to."""
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def _pump(source: socket.socket, target: socket.socket, done: threading.Semaphore) -> None:
    buffer = bytearray(BUFFER)
    view = memoryview(buffer)
    try:
        while count := source.recv_into(buffer):
            target.sendall(view[:count])
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    if not done.acquire(blocking=False):
        source.close()
        target.close()


def _join(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways; the second direction to finish closes both sockets."""
    done = threading.Semaphore(1)
    threading.Thread(target=_pump, args=(a, b, done), daemon=True).start()
    threading.Thread(target=_pump, args=(b, a, done), daemon=True).start()


def _serve(listener: socket.socket, connect: tuple[int, str | tuple[str, int]]) -> None:
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
        _join(client, upstream)


def _listen(port: int, target: str) -> None:
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
        threading.Thread(target=_serve, args=(listener, (socket.AF_UNIX, target)), daemon=True).start()


def _accept(fd: int, port: int) -> None:
    listener = socket.socket(fileno=fd)
    listener.set_inheritable(False)
    threading.Thread(target=_serve, args=(listener, (socket.AF_INET, ("127.0.0.1", port))), daemon=True).start()


def main(arguments: list[str]) -> None:
    config = json.loads(arguments[0])
    for port, target in config["listen"]:
        _listen(int(port), str(target))
    for fd, port in config["accept"]:
        _accept(int(fd), int(port))
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
