"""Testing the built wheels: each released package's tests, in a fresh environment holding only them."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from lnk.release import FILES, Manifest


def test_dependencies(root: Path) -> list[str]:
    """What the repository's tests need besides the packages: hatch.toml's default environment."""
    config = tomllib.loads((root / "hatch.toml").read_text())
    return list(config["envs"]["default"]["dependencies"])


def test_wheels(root: Path, out: Path, manifest: Manifest) -> list[tuple[str, int]]:
    """Install every built wheel into a new environment and run each package's tests against them."""
    wheels = [str(out / FILES / d.wheel().filename) for d in manifest.distributions]
    results: list[tuple[str, int]] = []
    with tempfile.TemporaryDirectory(prefix="link-release-wheels-") as tmp:
        env = Path(tmp) / "env"
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        python = str(env / "bin" / "python")
        subprocess.run([python, "-m", "pip", "install", "-q", *wheels, *test_dependencies(root)], check=True)
        for dist in manifest.distributions:
            if dist.path is None or not (root / dist.path / "tests").is_dir():
                continue
            print(f"\n=== {dist.name} {dist.version} (wheel) ===", flush=True)
            # From the package's folder, so its tests import the installed wheel, never src/.
            code = subprocess.call(
                [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=root / dist.path
            )
            results.append((dist.name, code))
    return results
