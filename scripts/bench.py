"""Run a package's benchmarks and print their figures.

python scripts/bench.py lnk-harness            # every benchmark of the package
python scripts/bench.py lnk-sandbox startup    # one of them
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def benchmarks(package: str) -> list[Path]:
    folder = ROOT / "packages" / package / "benchmarks"
    # A benchmark is a script; its helpers are modules it imports.
    return sorted(p for p in folder.glob("*.py") if "__main__" in p.read_text())


def main(args: list[str]) -> int:
    known = sorted(p.parent.name for p in (ROOT / "packages").glob("*/benchmarks"))
    if not args or args[0] not in known:
        print(f"usage: bench.py <package> [benchmark]; packages with benchmarks: {', '.join(known)}")
        return 2
    chosen = [p for p in benchmarks(args[0]) if len(args) < 2 or p.stem == args[1]]
    if not chosen:
        print(f"{args[0]} has no benchmark {args[1]!r}: {', '.join(p.stem for p in benchmarks(args[0]))}")
        return 2
    code = 0
    for script in chosen:
        print(f"\n=== {args[0]}: {script.stem} ===", flush=True)
        code |= subprocess.call([sys.executable, str(script)], cwd=script.parent.parent)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
