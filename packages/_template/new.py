"""Make a new package from this template: `./dev run new-package lnk-matrix "Matrix for lnk"`.

It copies packages/_template to packages/<distribution>, naming the import package after the
distribution (lnk-matrix -> lnk_matrix), the console script after it too and the plugin class
after the rest of its name (Matrix), then installs it, editable, into the environment running
this script (the workspace's), so `./dev run test lnk-matrix` runs its tests at once: a channel
plugin that passes the conformance kit's channel checks from its first commit.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent


def placeholders(distribution: str, description: str) -> dict[str, str]:
    name = distribution.removeprefix("lnk-")
    return {
        "__DIST__": distribution,
        "__IMPORT__": distribution.replace("-", "_"),
        "__SCRIPT__": distribution,
        "__NAME__": name,
        "__CLASS__": "".join(part.capitalize() for part in name.split("-")),
        "__DESCRIPTION__": description,
    }


def make(distribution: str, description: str, packages: Path = TEMPLATE.parent) -> Path:
    target = packages / distribution
    if target.exists():
        raise SystemExit(f"{target} exists already: pick another name or remove it first.")
    values = placeholders(distribution, description)
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


def install(target: Path, python: Path = Path(sys.executable)) -> None:
    """Editable, without its dependencies (the workspace has them), so its console script is on PATH."""
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "-e", target],
        check=True,
    )


def main() -> None:
    if len(sys.argv) != 3 or not sys.argv[1].islower() or not sys.argv[1].startswith("lnk-"):
        raise SystemExit('usage: new.py lnk-<name> "<one-line description>" (a plugin is the executable lnk-<name>)')
    target = make(sys.argv[1], sys.argv[2])
    install(target)
    print(
        f"made {target.relative_to(TEMPLATE.parent.parent)} and installed it: `./dev run test {sys.argv[1]}` "
        "runs its tests; write the service's part in its plugin.py"
    )


if __name__ == "__main__":
    main()
