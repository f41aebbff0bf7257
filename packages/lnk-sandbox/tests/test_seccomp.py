"""Link's seccomp filter, tried from inside real sandboxes: each refused call fails there (where the
kernel alone would have allowed it, with the filter's own answer), and ordinary work still runs.
The compiled tables are made again from their rules and compared, and so is the README's table."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import pty
import select
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType

import bpf
import pytest
from helpers import Link, Ran
from lnk_sandbox import seccomp
from lnk_sandbox.runner import Sandbox

from link_plugin.sandbox import SandboxRequest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
README = Path(__file__).resolve().parent.parent / "README.md"
PYTHON = os.path.normpath(sys.executable)
VENV = os.path.normpath(sys.prefix)

NUMBERS = {
    "x86_64": {
        "keyctl": 250, "add_key": 248, "io_uring_setup": 425, "userfaultfd": 323, "perf_event_open": 298,
        "bpf": 321, "unshare": 272, "clone": 56, "clone3": 435, "fsopen": 430, "open_tree": 428,
        "mount": 165, "ptrace": 101, "process_vm_writev": 311, "personality": 135, "kexec_load": 246,
        "finit_module": 313, "setns": 308, "syslog": 103, "open_by_handle_at": 304, "settimeofday": 164,
    },
    "aarch64": {
        "keyctl": 219, "add_key": 217, "io_uring_setup": 425, "userfaultfd": 282, "perf_event_open": 241,
        "bpf": 280, "unshare": 97, "clone": 220, "clone3": 435, "fsopen": 430, "open_tree": 428,
        "mount": 40, "ptrace": 117, "process_vm_writev": 271, "personality": 92, "kexec_load": 104,
        "finit_module": 273, "setns": 268, "syslog": 116, "open_by_handle_at": 265, "settimeofday": 170,
    },
}  # fmt: skip
"""System-call numbers, as the kernel's tables have them (the sandbox's Python has no libseccomp)."""
MACHINE = seccomp.ARCHES.get(platform.machine(), platform.machine())
CALL = NUMBERS.get(MACHINE, {})
pytestmark = pytest.mark.skipif(not CALL, reason=f"no system-call numbers here for {platform.machine()}")

PRELUDE = f"""
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {CALL!r}
def call(name, *args):
    args = [ctypes.c_ulong(a) if isinstance(a, int) else a for a in args]
    result = libc.syscall(NR[name], *args)
    print(errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()) if result == -1 else "allowed")
"""

REFUSED = {
    # name: (what runs inside after PRELUDE, what the filter answers)
    "keyctl on the session keyring": ("call('keyctl', 0, 0xFFFFFFFD, 0)", "EPERM"),
    "add_key": ("call('add_key', b'user', b'lnk', b'x', 1, 0xFFFFFFFD)", "EPERM"),
    "io_uring_setup": ("call('io_uring_setup', 8, ctypes.create_string_buffer(120))", "ENOSYS"),
    "userfaultfd, user mode only": ("call('userfaultfd', 1)", "EPERM"),
    "perf_event_open, own process, no kernel": (
        "a = ctypes.create_string_buffer(128); a[0] = 1; a[4] = 128; a[40] = 0x20\n"
        "call('perf_event_open', a, 0, 0xFFFFFFFF, 0xFFFFFFFF, 0)",
        "EPERM",
    ),
    "bpf": ("call('bpf', 0, ctypes.create_string_buffer(72), 72)", "EPERM"),
    "unshare a user namespace": ("call('unshare', 0x10000000)", "EPERM"),
    "unshare a mount namespace": ("call('unshare', 0x00020000)", "EPERM"),
    "unshare a network namespace": ("call('unshare', 0x40000000)", "EPERM"),
    "clone into a user namespace": ("call('clone', 0x10000000 | 17, 0, 0, 0, 0)", "EPERM"),
    "clone into a PID namespace": ("call('clone', 0x20000000 | 17, 0, 0, 0, 0)", "EPERM"),
    "clone3": ("call('clone3', ctypes.create_string_buffer(88), 88)", "ENOSYS"),
    "fsopen": ("call('fsopen', b'tmpfs', 0)", "ENOSYS"),
    "open_tree": ("call('open_tree', 0xFFFFFF9C, b'/tmp', 1)", "ENOSYS"),
    "mount": ("call('mount', b'none', b'/tmp', b'tmpfs', 0, 0)", "EPERM"),
    "setns": ("call('setns', os.open('/proc/self/ns/net', os.O_RDONLY), 0)", "EPERM"),
    "personality without address randomisation": ("call('personality', 0x0040000)", "EPERM"),
    "kexec_load": ("call('kexec_load', 0, 0, 0, 0)", "EPERM"),
    "finit_module": ("call('finit_module', os.open('/dev/null', os.O_RDONLY), b'', 0)", "EPERM"),
    "syslog": ("call('syslog', 10, 0, 0)", "EPERM"),
    "open_by_handle_at": ("call('open_by_handle_at', 0xFFFFFF9C, ctypes.create_string_buffer(64), 0)", "EPERM"),
    "settimeofday": ("call('settimeofday', 0, 0)", "EPERM"),
    "a packet socket": ("import socket\ntry:\n    socket.socket(17, socket.SOCK_RAW)\nexcept OSError as e:\n"
                        "    print(errno.errorcode[e.errno])", "EAFNOSUPPORT"),
    "a vsock socket to the host": ("import socket\ntry:\n    socket.socket(40, socket.SOCK_STREAM)\n"
                                   "except OSError as e:\n    print(errno.errorcode[e.errno])", "EAFNOSUPPORT"),
    "TIOCLINUX": ("import fcntl\ntry:\n    fcntl.ioctl(1, 0x541C, b'\\x02')\nexcept OSError as e:\n"
                  "    print(errno.errorcode[e.errno])", "EPERM"),
}  # fmt: skip


def inside(link: Link, code: str, **fields: object) -> Ran:
    return link.run(["python3", "-I", "-c", PRELUDE + code], **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("what", list(REFUSED))
def test_a_refused_call_fails_inside(link: Link, what: str) -> None:
    code, answer = REFUSED[what]
    ran = inside(link, code)
    assert ran.out.split() == [answer], (what, ran)


def test_every_sandbox_has_the_filter(link: Link) -> None:
    for fields in ({}, {"mode": "health"}, {"mode": "setup", "hosts": []}, {"mode": "tool", "harness": None}):
        ran = link.sh("grep '^Seccomp:' /proc/self/status", **fields)  # type: ignore[arg-type]
        assert ran.out.split() == ["Seccomp:", "2"], (fields, ran)


def _keyring() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def test_the_callers_session_keyring_is_out_of_reach(link: Link) -> None:
    """A key in the keyring of the process that starts the sandbox: readable here, not inside."""
    libc = _keyring()
    secret = b"kerberos-ticket-stand-in"
    key = libc.syscall(
        CALL["add_key"], b"user", f"lnk-test-{os.getpid()}".encode(), secret, len(secret), ctypes.c_long(-3)
    )
    assert key > 0, os.strerror(ctypes.get_errno())
    try:
        buffer = ctypes.create_string_buffer(64)
        assert libc.syscall(CALL["keyctl"], 11, ctypes.c_long(key), buffer, 64) == len(secret)  # KEYCTL_READ
        assert buffer.raw[: len(secret)] == secret
        read = f"buffer = ctypes.create_string_buffer(64)\ncall('keyctl', 11, {key}, buffer, 64)\nprint(buffer.raw)"
        ran = inside(link, read)
        assert ran.out.splitlines()[0] == "EPERM" and b"kerberos" not in ran.out.encode(), ran
        write = f"call('keyctl', 2, {key}, b'replaced', 8)"  # KEYCTL_UPDATE
        assert inside(link, write).out.split() == ["EPERM"]
        assert libc.syscall(CALL["keyctl"], 11, ctypes.c_long(key), buffer, 64) == len(secret)
        assert buffer.raw[: len(secret)] == secret
    finally:
        libc.syscall(CALL["keyctl"], 21, ctypes.c_long(key))  # KEYCTL_INVALIDATE


INJECT = """
import fcntl, os, termios
child = os.fork()
if child == 0:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    print("controlling terminal taken", flush=True)
    for request in (termios.TIOCSTI, termios.TIOCSTI | 1 << 32):
        try:
            for byte in b"echo LNK-INJECTED\\n":
                fcntl.ioctl(0, request, bytes([byte]))
            print("injected", flush=True)
        except OSError as exc:
            print(errno.errorcode[exc.errno], flush=True)
    os._exit(0)
os.waitpid(child, 0)
"""


def test_typing_into_a_terminal_handed_in_is_refused(link: Link) -> None:
    """The way it was done: an orphan terminal handed in, setsid, TIOCSCTTY, then TIOCSTI."""
    master, slave = pty.openpty()
    try:
        with tempfile.TemporaryFile() as out:
            code = Sandbox(
                SandboxRequest(agent="main", harness="mini", argv=["python3", "-I", "-c", PRELUDE + INJECT]),
                link.layout,
                environ=link.environ,
                stdin=slave,
                stdout=out,
                stderr=subprocess.DEVNULL,
            ).run()
            out.seek(0)
            said = out.read().decode().split("\n")
        os.set_blocking(slave, False)
        queued = b""
        while select.select([slave], [], [], 0.2)[0]:
            try:
                queued += os.read(slave, 4096)
            except BlockingIOError:
                break
    finally:
        os.close(slave)
        os.close(master)
    assert code == 0 and said[:3] == ["controlling terminal taken", "EPERM", "EPERM"], said
    assert b"LNK-INJECTED" not in queued


def _killed_by_a_bad_arch(link: Link, code: str) -> None:
    ran = inside(link, code + "\nprint('survived')")
    assert ran.code == 128 + 31 and "survived" not in ran.out, ran  # SIGSYS, as bwrap reports a signal


@pytest.mark.skipif(MACHINE != "x86_64", reason="i386 and x32 are x86_64's other interfaces")
def test_the_i386_interface_ends_the_process(link: Link) -> None:
    getpid = (
        "import mmap\n"
        "page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
        "page.write(b'\\xb8\\x14\\x00\\x00\\x00\\xcd\\x80\\xc3')  # mov eax, 20 (getpid); int 0x80; ret\n"
        "print(ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))())"
    )
    _killed_by_a_bad_arch(link, getpid)


@pytest.mark.skipif(MACHINE != "x86_64", reason="i386 and x32 are x86_64's other interfaces")
def test_the_x32_interface_ends_the_process(link: Link) -> None:
    _killed_by_a_bad_arch(link, "libc.syscall(0x40000000 | 39)")


def test_attaching_to_another_process_is_refused_but_a_child_may_ask(link: Link) -> None:
    code = (
        "import subprocess\n"
        "other = subprocess.Popen(['sleep', '30'])\n"
        "call('ptrace', 16, other.pid, 0, 0)  # PTRACE_ATTACH\n"
        "call('ptrace', 0x4206, other.pid, 0, 0)  # PTRACE_SEIZE\n"
        "call('process_vm_writev', other.pid, 0, 0, 0, 0, 0)\n"
        "other.kill()\n"
        "sys.stdout.flush()\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    call('ptrace', 0, 0, 0, 0)  # PTRACE_TRACEME: the parent may trace it\n"
        "    sys.stdout.flush()\n"
        "    os._exit(0)\n"
        "os.waitpid(child, 0)\n"
    )
    assert inside(link, code).out.split() == ["EPERM", "EPERM", "EPERM", "allowed"]


def test_unsharing_what_is_no_namespace_still_works(link: Link) -> None:
    assert inside(link, "call('unshare', 0x00000200)  # CLONE_FS").out.split() == ["allowed"]


def test_ordinary_work_still_runs(link: Link) -> None:
    work = link.layout.agent("main").home / "work"
    script = (
        "set -e\n"
        "python3 -c 'import threading, subprocess, os\n"
        "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
        'assert subprocess.run(["true"]).returncode == 0\n'
        "pid = os.fork()\n"
        "os._exit(0) if pid == 0 else os.waitpid(pid, 0)\n"
        'print("python ok")\'\n'
        f"cd {work} && git init -q repo && cd repo\n"
        "git -c user.name=t -c user.email=t@here commit -q --allow-empty -m first\n"
        "git log --format=%s\n"
        "node -e \"const fs = require('fs'); fs.writeFileSync('n.txt', 'node'); "
        "require('child_process').execFileSync('true'); "
        "fs.promises.readFile('n.txt', 'utf8').then(t => console.log(t + ' ok'))\"\n"
    )
    ran = link.sh(script)
    assert ran.out.splitlines() == ["python ok", "first", "node ok"], ran


def test_pip_installs_from_a_local_wheel_folder(link: Link) -> None:
    work = link.layout.agent("main").home / "work"
    wheels = work / "wheels"
    wheels.mkdir()
    name = "lnk_seccomp_probe"
    with zipfile.ZipFile(wheels / f"{name}-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{name}.py", "ANSWER = 42\n")
        wheel.writestr(f"{name}-1.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        wheel.writestr(
            f"{name}-1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{name}-1.0.dist-info/RECORD", "")
    target = work / "site"
    ran = link.run(
        [
            PYTHON,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--find-links",
            str(wheels),
            "--target",
            str(target),
            name,
        ],
        reads=[VENV],
        environ={"PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert ran.code == 0, ran
    check = link.run(
        ["python3", "-c", f"import sys; sys.path.insert(0, {str(target)!r}); import {name}; print({name}.ANSWER)"]
    )
    assert check.out.strip() == "42", check


def test_an_unknown_architecture_is_refused_rather_than_run_without_the_filter() -> None:
    from link_plugin.errors import LinkError

    with pytest.raises(LinkError, match="no seccomp filter for this machine's architecture"):
        seccomp.program("riscv64")
    assert len(seccomp.program()) % 8 == 0


def _generator() -> ModuleType:
    """scripts/seccomp_tables.py; skipped only where libseccomp (or its binding) is missing."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        import seccomp_tables
    except (ImportError, RuntimeError) as exc:  # pyseccomp raises RuntimeError without libseccomp
        pytest.skip(f"the generator needs libseccomp and pyseccomp: {exc}")
    finally:
        sys.path.remove(str(SCRIPTS))
    return seccomp_tables


def test_the_shipped_tables_are_made_from_the_rules() -> None:
    tables = _generator()
    for arch, program in tables.tables().items():
        shipped = Path(seccomp.__file__).with_name(f"{arch}.bpf").read_bytes()
        assert shipped == program, f"{arch}.bpf differs from rules.toml: run scripts/seccomp_tables.py"


def test_the_readme_lists_every_rule_with_its_reason() -> None:
    tables = _generator()
    assert tables.markdown(tables.load()) in README.read_text()


def test_the_rules_are_read_strictly(tmp_path: Path) -> None:
    tables = _generator()
    bad = tmp_path / "rules.toml"
    bad.write_text('[[rule]]\ncalls = ["ioctl"]\nerrno = "EPERM"\nwhy = "x"\nequals = { A = 1 }\n')
    with pytest.raises(ValueError, match="arg"):
        tables.load(bad)


ALLOWED = [
    ("read", ()),
    ("openat", ()),
    ("clone", (0x003D0F00,)),  # a thread: CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | ...
    ("unshare", (0x00000200,)),
    ("ioctl", (1, 0x5401)),  # TCGETS
    ("ioctl", (1, 0x5411)),  # TIOCOUTQ, beside TIOCSTI
    ("socket", (2, 1)),
    ("socket", (10, 1)),
    ("socket", (1, 1)),
    ("socket", (16, 3)),
    ("personality", (0,)),
    ("ptrace", (0,)),  # PTRACE_TRACEME
    ("ptrace", (2,)),  # PTRACE_PEEKDATA, of a child being traced
]


@pytest.mark.parametrize("arch", sorted(set(seccomp.ARCHES.values())))
def test_each_table_refuses_exactly_what_its_rules_say(arch: str) -> None:
    """Read without a kernel, so the aarch64 table is checked on x86_64 and the other way round."""
    tables = _generator()
    import pyseccomp

    program = Path(seccomp.__file__).with_name(f"{arch}.bpf").read_bytes()
    target = tables.ARCHES[arch]

    def answer(name: str, args: tuple[int, ...]) -> int:
        return bpf.run(program, bpf.data(arch, pyseccomp.resolve_syscall(target, name), args))

    for rule in tables.load():
        refused = bpf.errno_action(getattr(errno, rule.errno))
        for call in (c for c in rule.calls if pyseccomp.resolve_syscall(target, c) >= 0):
            at = rule.arg or 0
            if rule.arg is None:
                assert answer(call, ()) == refused, (arch, call)
            for value in (rule.equals or {}).values():
                assert answer(call, (0,) * at + (value,)) == refused, (arch, call, value)
                assert answer(call, (0,) * at + (value | 1 << 32,)) == refused, (arch, call, "high bits")
                assert answer(call, (0,) * at + (value + 1,)) == bpf.ALLOW, (arch, call, value + 1)
            for flag in (rule.any_bit or {}).values():
                assert answer(call, (0,) * at + (flag | 17,)) == refused, (arch, call, flag)
            if rule.only is not None:
                allowed = set(rule.only.values())
                for value in range(max(allowed) + 3):
                    expected = bpf.ALLOW if value in allowed else refused
                    assert answer(call, (0,) * at + (value,)) == expected, (arch, call, value)
                assert answer(call, (0,) * at + (min(allowed) | 1 << 32,)) == refused, (arch, call, "high bits")
    for name, args in ALLOWED:
        assert answer(name, args) == bpf.ALLOW, (arch, name, args)
    assert bpf.run(program, bpf.data("i386", 20)) == bpf.KILL_PROCESS
    if arch == "x86_64":
        assert bpf.run(program, bpf.data(arch, 0x40000000 | 39)) == bpf.KILL_PROCESS
