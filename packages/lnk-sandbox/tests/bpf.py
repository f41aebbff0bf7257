"""A classic-BPF evaluator for seccomp programs, enough to read Link's tables without a kernel: so a
table can be checked against its rules on any machine, the architectures it can't run on included."""

from __future__ import annotations

import struct

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7, "i386": 0x40000003}
ALLOW = 0x7FFF0000
KILL_PROCESS = 0x80000000


def errno_action(number: int) -> int:
    return 0x00050000 | number


def data(arch: str, nr: int, args: tuple[int, ...] = ()) -> bytes:
    """struct seccomp_data, as the kernel hands it to the filter."""
    full = (*args, *(0,) * (6 - len(args)))
    return struct.pack("<iIQ6Q", nr, AUDIT_ARCH[arch], 0, *full)


def run(program: bytes, seen: bytes) -> int:
    """What the program answers for one system call."""
    code = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    a = 0
    pc = 0
    while True:
        op, jt, jf, k = code[pc]
        pc += 1
        if op == 0x20:  # ld  [k]
            a = struct.unpack_from("<I", seen, k)[0]
        elif op == 0x54:  # and #k
            a &= k
        elif op in (0x15, 0x25, 0x35, 0x45):  # jeq, jgt, jge, jset #k
            taken = {0x15: a == k, 0x25: a > k, 0x35: a >= k, 0x45: bool(a & k)}[op]
            pc += jt if taken else jf
        elif op == 0x05:  # ja
            pc += k
        elif op == 0x06:  # ret #k
            return k
        else:
            raise ValueError(f"instruction {op:#x} isn't one this reads")
