"""One release of the whole tree per session, signed with a throwaway key, and lnk installed from it by pipx.

The tree is a copy of this repository's packages, so the tests can change versions and files. If
lnk-telegram has not landed yet, the copy gets one made from packages/_template: a channel plugin
named telegram that answers the contract's commands with their defaults.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from link_release.index import build_release, sign_release
from link_release.keys import SecretKey
from lnk.release import ENV_INDEX
from lnk.signing import ENV_DEV_KEY

ROOT = Path(__file__).resolve().parents[2]
COPIED = ("packages", "adapters", "conformance-kit", "hatch.toml")
IGNORED = shutil.ignore_patterns("__pycache__", "*.egg-info", ".pytest_cache", ".mypy_cache", ".ruff_cache", "dist")

TELEGRAM_CLI = '''"""lnk-telegram as the release tests make it from the template."""

from link_plugin.plugin import ChannelPlugin, run

from lnk_telegram import __version__


class Telegram(ChannelPlugin):
    name = "telegram"
    release = __version__


def main() -> None:
    run(Telegram())
'''


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=lnk tests", "-c", "user.email=tests@lnk.invalid", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def from_template(tree: Path, distribution: str, code: str) -> None:
    spec = importlib.util.spec_from_file_location("template_new", tree / "packages" / "_template" / "new.py")
    assert spec and spec.loader
    new = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(new)
    made: Path = new.make(distribution, f"{distribution}, made by the release tests")
    (made / "src" / distribution.replace("-", "_") / "cli.py").write_text(code)


VERSION = re.compile(r'^(__version__|version) = "([^"]+)"', re.MULTILINE)


def version_file(package: Path) -> Path:
    """Where a package's version is written: pyproject.toml, or the file hatch reads it from."""
    config = tomllib.loads((package / "pyproject.toml").read_text())
    if "version" in config["project"]:
        return package / "pyproject.toml"
    return package / config["tool"]["hatch"]["version"]["path"]


def source_version(package: Path) -> str:
    match = VERSION.search(version_file(package).read_text())
    assert match, f"no version in {package}"
    return match.group(2)


def bump(package: Path, version: str) -> None:
    """Raise a package's version, with the changelog entry a release requires."""
    source = version_file(package)
    source.write_text(VERSION.sub(lambda m: f'{m.group(1)} = "{version}"', source.read_text(), count=1))
    changelog = package / "CHANGELOG.md"
    title, _, rest = changelog.read_text().partition("\n")
    changelog.write_text(f"{title}\n\n## {version}\n\n- A release made by the tests.\n{rest}")


def copy_tree(target: Path) -> Path:
    target.mkdir(parents=True)
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=IGNORED)
        else:
            shutil.copy2(source, target / name)
    if not (target / "packages" / "lnk-telegram").exists():
        from_template(target, "lnk-telegram", TELEGRAM_CLI)
    git(target, "init", "-q")
    git(target, "add", "-A")
    git(target, "commit", "-q", "-m", "the tree under test")
    return target


@pytest.fixture(scope="session")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_tree(tmp_path_factory.mktemp("tree") / "repo")


@dataclass(frozen=True)
class Key:
    secret: SecretKey
    public: Path


@pytest.fixture(scope="session")
def key(tmp_path_factory: pytest.TempPathFactory) -> Key:
    secret = SecretKey.generate()
    public = tmp_path_factory.mktemp("key") / "test.pub"
    public.write_text(secret.public.file_text())
    return Key(secret, public)


@pytest.fixture(scope="session")
def release(tree: Path, key: Key, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("release") / "release"
    build_release(tree, out)
    sign_release(out, key.secret)
    return out


@dataclass(frozen=True)
class Pipx:
    """lnk as pipx installed it: its program, and its environment's python and bin folder."""

    lnk: Path
    python: Path
    bin: Path
    env: dict[str, str]

    def run(self, *args: str, index: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = {**self.env, ENV_INDEX: str(index)} if index else self.env
        return subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)


@pytest.fixture(scope="session")
def pipx(release: Path, key: Key, tmp_path_factory: pytest.TempPathFactory) -> Pipx:
    home = tmp_path_factory.mktemp("pipx")
    pipx_env = {
        **os.environ,
        "PIPX_HOME": str(home / "pipx"),
        "PIPX_BIN_DIR": str(home / "bin"),
        "PIPX_MAN_DIR": str(home / "man"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pipx", "install", "lnk", "--index-url", (release / "simple").as_uri()],
        capture_output=True,
        text=True,
        env=pipx_env,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    venv = home / "pipx" / "venvs" / "lnk" / "bin"
    env = {
        "PATH": f"{home / 'bin'}:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", str(home)),
        "LNK_CONFIG_DIR": str(home / "config"),
        "LNK_AGENTS_DIR": str(home / "agents"),
        ENV_DEV_KEY: str(key.public),
    }
    return Pipx(lnk=home / "bin" / "lnk", python=venv / "python", bin=venv, env=env)
