"""Link as a user gets it: every wheel of this tree in a release signed with a throwaway key (by the
release tool, as CI makes Link's), and `lnk` installed from it into a new virtual environment."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
"""The repository whose tree is released."""


def _run(argv: list[str], timeout: float = 600) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


@dataclass(frozen=True)
class Release:
    folder: Path
    public_key: Path
    core: str
    """lnk's version, which the release carries."""
    distributions: list[str]

    def wheel(self, distribution: str) -> Path:
        stem = distribution.replace("-", "_")
        found = sorted((self.folder / "files").glob(f"{stem}-*-py3-none-any.whl"))
        assert found, f"the release holds no wheel of {distribution}"
        return found[-1]


def build_release(out: Path, keys: Path) -> Release:
    """`link-release keygen`, `build` and `sign`: the whole tree, signed with a key made for this run."""
    tool = [sys.executable, "-m", "link_release"]
    keys.mkdir(parents=True, exist_ok=True)
    secret, public = keys / "release.key", keys / "release.pub"
    _run([*tool, "keygen", str(secret), str(public)])
    _run([*tool, "build", str(out), "--root", str(ROOT)])
    _run([*tool, "sign", str(out), "--key-file", str(secret)])
    _run([*tool, "verify", str(out), "--public-key", str(public)])
    secret.unlink()  # signed: the secret is needed no more
    return read_release(out, keys)


def read_release(out: Path, keys: Path) -> Release:
    """A release `build_release` made (another test process of the run reuses it)."""
    manifest = json.loads((out / "manifest.json").read_text())
    return Release(out, keys / "release.pub", manifest["core"], [d["name"] for d in manifest["distributions"]])


def install_lnk(release: Release, venv: Path) -> Path:
    """A new virtual environment with `lnk` installed from the release; the path of its `lnk`.

    The wheel is named by its file in the release, so a project called lnk on another index can't
    stand in for it; Link's distributions it needs come from the release's index, the rest from
    pip's usual one."""
    _run([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run([*pip, "--extra-index-url", (release.folder / "simple").as_uri(), str(release.wheel("lnk"))], timeout=900)
    return venv / "bin" / "lnk"
