"""Run every package's tests, each package in a pytest process of its own, then the end-to-end suite.

First, what the tests need from the system (bubblewrap, minisign, ...) is checked, and installed
when it can be (scripts/host_tools.py): a machine without it stops in a second with one line.

python scripts/test.py               # everything
python scripts/test.py lnk-core      # one or more folders by name
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import host_tools

ROOT = Path(__file__).resolve().parent.parent


def suites() -> list[Path]:
    """Folders with tests: each package and adapter, the conformance kit, then the end-to-end suite last."""
    packages = sorted(
        p.parent
        for folder in ("packages", "adapters")
        for p in (ROOT / folder).glob("*/tests")
        if not p.parent.name.startswith("_")
    )
    others = [ROOT / "conformance-kit", ROOT / "release", ROOT / "scripts", ROOT / "tests-e2e"]
    return packages + [p for p in others if (p / "tests").is_dir() or list(p.glob("test_*.py"))]


def main(names: list[str]) -> int:
    chosen = [s for s in suites() if not names or s.name in names]
    unknown = set(names) - {s.name for s in suites()}
    if unknown:
        print(f"no tests named {', '.join(sorted(unknown))}; there are: {', '.join(s.name for s in suites())}")
        return 2
    problem = host_tools.ensure()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    results: list[tuple[str, int, float]] = []
    for folder in chosen:
        print(f"\n=== {folder.relative_to(ROOT)} ===", flush=True)
        started = time.monotonic()
        code = subprocess.call(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout", "600"], cwd=folder
        )
        results.append((str(folder.relative_to(ROOT)), code, time.monotonic() - started))
    print("\n=== summary ===")
    for name, code, seconds in results:
        print(f"{'ok    ' if code == 0 else 'FAILED'} {name} ({seconds:.0f} s)")
    return 0 if all(code == 0 for _, code, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
