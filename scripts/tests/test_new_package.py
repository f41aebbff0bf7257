"""`./dev run new-package lnk-example "An example"` makes a package that passes its own tests (the
conformance kit's channel checks among them) at once. Made in a temporary folder and installed
into a virtual environment of its own that sees the workspace's packages, never into the
workspace's environment itself."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "packages" / "_template"))

import new  # noqa: E402  (the template's script, run from its folder as `./dev run new-package` runs it)


def test_a_new_package_passes_its_own_tests(tmp_path: Path) -> None:
    made = new.make("lnk-example", "An example", packages=tmp_path)
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    # The workspace's packages (and their editable ones) seen from the new environment.
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "workspace.pth").write_text(f"import site; site.addsitedir({site.getsitepackages()[0]!r})\n")

    new.install(made, python)
    assert (env_dir / "bin" / "lnk-example").exists()

    tests = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=made,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ['PATH']}"},
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-3000:]
    assert "passed" in tests.stdout and "failed" not in tests.stdout
