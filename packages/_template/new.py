"""Make a new package from this template: `./dev run new-package lnk-matrix "Matrix for lnk"`.

It copies packages/_template to packages/<distribution>, naming the import package after the
distribution (lnk-matrix -> lnk_matrix) and the console script after it too.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent
PLACEHOLDERS = ("__DIST__", "__IMPORT__", "__SCRIPT__", "__DESCRIPTION__")


def make(distribution: str, description: str) -> Path:
    target = TEMPLATE.parent / distribution
    if target.exists():
        raise SystemExit(f"{target} exists already: pick another name or remove it first.")
    values = {
        "__DIST__": distribution,
        "__IMPORT__": distribution.replace("-", "_"),
        "__SCRIPT__": distribution,
        "__DESCRIPTION__": description,
    }
    shutil.copytree(TEMPLATE, target, ignore=shutil.ignore_patterns("new.py", "__pycache__"))
    for path in sorted(target.rglob("*"), reverse=True):
        if path.is_file():
            text = path.read_text()
            for placeholder, value in values.items():
                text = text.replace(placeholder, value)
            path.write_text(text)
        if "__IMPORT__" in path.name:
            path.rename(path.with_name(path.name.replace("__IMPORT__", values["__IMPORT__"])))
    return target


def main() -> None:
    if len(sys.argv) != 3 or not sys.argv[1].islower():
        raise SystemExit('usage: new.py <distribution, e.g. lnk-matrix> "<one-line description>"')
    target = make(sys.argv[1], sys.argv[2])
    print(
        f"made {target.relative_to(TEMPLATE.parent.parent)}: add src/{sys.argv[1].replace('-', '_')}/cli.py "
        "with main(), then `./dev env prune` so the dev environment picks it up"
    )


if __name__ == "__main__":
    main()
