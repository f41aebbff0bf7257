"""Make Link's seccomp tables from their readable rules, with libseccomp.

    python packages/lnk-sandbox/scripts/seccomp_tables.py           # write <arch>.bpf beside rules.toml
    python packages/lnk-sandbox/scripts/seccomp_tables.py --check   # exit 1 when a table differs
    python packages/lnk-sandbox/scripts/seccomp_tables.py --table   # the README's table of rules
    python packages/lnk-sandbox/scripts/seccomp_tables.py --pfc x86_64   # a table as libseccomp reads it

The rules (`src/lnk_sandbox/seccomp/rules.toml`) say what a sandbox is refused and why; this
turns them into one classic-BPF program per architecture, the bytes bubblewrap loads with
`--seccomp FD`. The tables are committed in the package, so a sandbox starts without libseccomp
and without building anything; `tests/test_seccomp.py` makes them again and compares.

Needs libseccomp's shared library (Debian: libseccomp2) and its ctypes binding `pyseccomp`
(in the workspace's environment).
"""

from __future__ import annotations

import errno
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Literal

import pyseccomp  # type: ignore[import-untyped]  # a ctypes binding without type information
from pydantic import BaseModel, ConfigDict, model_validator

FOLDER = Path(__file__).resolve().parent.parent / "src" / "lnk_sandbox" / "seccomp"
RULES = FOLDER / "rules.toml"
ARCHES = {"x86_64": pyseccomp.Arch.X86_64, "aarch64": pyseccomp.Arch.AARCH64}
"""The architectures a table is made for, by the name `platform.machine()` gives them."""
LOW32 = 0xFFFFFFFF


class Rule(BaseModel):
    """One rule of rules.toml: calls refused with an errno, all of them or some by one argument."""

    model_config = ConfigDict(extra="forbid")

    calls: list[str]
    errno: Literal["EPERM", "ENOSYS", "EAFNOSUPPORT"]
    why: str
    arg: int | None = None
    equals: dict[str, int] | None = None
    any_bit: dict[str, int] | None = None
    only: dict[str, int] | None = None

    @model_validator(mode="after")
    def _one_condition(self) -> Rule:
        given = [c for c in (self.equals, self.any_bit, self.only) if c is not None]
        if (self.arg is None) != (not given) or len(given) > 1:
            raise ValueError("a rule gives `arg` with exactly one of equals, any_bit, only, or neither")
        return self

    def conditions(self) -> list[pyseccomp.Arg | None]:
        """One libseccomp comparison per rule it becomes (rules of one call are or-ed); None: the whole call."""
        if self.arg is None:
            return [None]
        arg = self.arg
        if self.equals is not None:
            return [pyseccomp.Arg(arg, pyseccomp.MASKED_EQ, LOW32, value) for value in self.equals.values()]
        if self.any_bit is not None:
            return [pyseccomp.Arg(arg, pyseccomp.MASKED_EQ, flag, flag) for flag in self.any_bit.values()]
        assert self.only is not None
        # None of the allowed values: each value in the gaps between them, then everything above
        # the last (which catches any high bits set too).
        allowed = sorted(self.only.values())
        gaps = [value for value in range(allowed[-1]) if value not in allowed]
        return [
            *(pyseccomp.Arg(arg, pyseccomp.EQ, value) for value in gaps),
            pyseccomp.Arg(arg, pyseccomp.GE, allowed[-1] + 1),
        ]

    def when(self) -> str:
        """The condition, as the README says it."""
        if self.arg is None:
            return "always"
        if self.equals is not None:
            return f"argument {self.arg} is {' or '.join(self.equals)}"
        if self.any_bit is not None:
            return f"argument {self.arg} has {' or '.join(self.any_bit)}"
        assert self.only is not None
        return f"argument {self.arg} is other than {', '.join(self.only)}"


class Rules(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rule: list[Rule]


def load(path: Path = RULES) -> list[Rule]:
    return Rules.model_validate(tomllib.loads(path.read_text())).rule


def _filter(rules: list[Rule], arch: str) -> pyseccomp.SyscallFilter:
    """Everything allowed but what the rules refuse, on one architecture."""
    target = ARCHES[arch]
    bpf = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    # Another system-call interface than the machine's own (i386 or x32 on x86_64) ends the process.
    bpf.set_attr(pyseccomp.Attr.ACT_BADARCH, pyseccomp.KILL_PROCESS)
    if pyseccomp.system_arch() != target:
        bpf.add_arch(target)
        bpf.remove_arch(pyseccomp.Arch.NATIVE)
    for rule in rules:
        action = pyseccomp.ERRNO(getattr(errno, rule.errno))
        # A call this architecture lacks resolves to a negative number: nothing to refuse there.
        for call in (call for call in rule.calls if pyseccomp.resolve_syscall(target, call) >= 0):
            for condition in rule.conditions():
                bpf.add_rule(action, call, *(() if condition is None else (condition,)))
    return bpf


def table(rules: list[Rule], arch: str) -> bytes:
    """The BPF program for one architecture, as bubblewrap loads it."""
    with tempfile.TemporaryFile() as out:
        _filter(rules, arch).export_bpf(out)
        out.seek(0)
        return out.read()


def pfc(rules: list[Rule], arch: str) -> str:
    """A table as libseccomp describes it, to read."""
    with tempfile.TemporaryFile() as out:
        _filter(rules, arch).export_pfc(out)
        out.seek(0)
        return out.read().decode()


def markdown(rules: list[Rule]) -> str:
    """The README's table: each call refused, when, with what, and why."""
    lines = ["| calls | refused when | answer | why |", "| --- | --- | --- | --- |"]
    for rule in rules:
        calls = ", ".join(f"`{call}`" for call in rule.calls)
        why = " ".join(rule.why.split())
        lines.append(f"| {calls} | {rule.when()} | {rule.errno} | {why} |")
    return "\n".join(lines) + "\n"


def tables() -> dict[str, bytes]:
    rules = load()
    return {arch: table(rules, arch) for arch in ARCHES}


def main(args: list[str]) -> int:
    if args[:1] == ["--table"]:
        sys.stdout.write(markdown(load()))
        return 0
    if args[:1] == ["--pfc"] and len(args) == 2 and args[1] in ARCHES:
        sys.stdout.write(pfc(load(), args[1]))
        return 0
    check = args == ["--check"]
    if args and not check:
        print(__doc__)
        return 2
    drifted = []
    for arch, program in tables().items():
        path = FOLDER / f"{arch}.bpf"
        if check:
            if not path.is_file() or path.read_bytes() != program:
                drifted.append(path.name)
        else:
            path.write_bytes(program)
            print(f"{path}: {len(program) // 8} instructions")
    if drifted:
        print(f"{', '.join(drifted)} differ from rules.toml: run {Path(__file__).name} and commit what it writes.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
