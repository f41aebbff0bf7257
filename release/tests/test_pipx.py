"""`pipx install lnk` from the release index gives a working lnk; its plugins install on first use,
only from a release that is signed with the right key and unchanged; `lnk upgrade` moves it all forward.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import Key, Pipx, bump, copy_tree

from link_release.index import build_release, sign_release
from link_release.keys import SecretKey
from lnk.release import Manifest

ENSURE = """
import sys
from link_plugin.errors import LinkError
from lnk.install import PLUGINS, ensure_plugin
try:
    print(ensure_plugin(PLUGINS[sys.argv[1]]))
except LinkError as exc:
    print(exc, file=sys.stderr)
    sys.exit(1)
"""


def first_use(pipx: Pipx, index: Path) -> subprocess.CompletedProcess[str]:
    """What `lnk agent connect telegram` does first: make sure lnk-telegram is there."""
    return pipx.run(str(pipx.python), "-c", ENSURE, "telegram", index=index)


def version_in(pipx: Pipx, distribution: str) -> str:
    done = pipx.run(str(pipx.python), "-c", f"import importlib.metadata as m; print(m.version({distribution!r}))")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def telegram_installed(pipx: Pipx) -> bool:
    venv = pipx.python.parent.parent
    return (pipx.bin / "lnk-telegram").exists() or any(venv.glob("lib/python*/site-packages/lnk_telegram*"))


def test_pipx_installs_a_working_lnk_from_the_index(pipx: Pipx, release: Path) -> None:
    manifest = Manifest.model_validate_json((release / "manifest.json").read_bytes())
    done = pipx.run(str(pipx.lnk), "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"lnk {manifest.core}"
    listed = pipx.run(str(pipx.lnk), "plugins", "--json")
    assert listed.returncode == 0, listed.stderr
    assert isinstance(json.loads(listed.stdout), list)


def test_first_use_installs_telegram_only_from_a_signed_unchanged_release(
    pipx: Pipx, release: Path, key: Key, tmp_path: Path
) -> None:
    tampered = tmp_path / "tampered"
    shutil.copytree(release, tampered)
    wheel = next((tampered / "files").glob("lnk_telegram-*.whl"))
    data = bytearray(wheel.read_bytes())
    data[len(data) // 2] ^= 0x01
    wheel.write_bytes(bytes(data))
    refused = first_use(pipx, tampered)
    assert refused.returncode == 1
    assert f"{wheel.name} is not the file the release manifest names" in refused.stderr
    assert not telegram_installed(pipx)

    foreign = tmp_path / "foreign"
    shutil.copytree(release, foreign)
    sign_release(foreign, SecretKey.generate())
    refused = first_use(pipx, foreign)
    assert refused.returncode == 1
    assert f"not Link's release key {key.secret.public.key_id_hex}" in refused.stderr
    assert not telegram_installed(pipx)

    done = first_use(pipx, release)
    assert done.returncode == 0, done.stderr
    program = Path(done.stdout.strip())
    assert program == pipx.bin / "lnk-telegram"
    contract = subprocess.run([str(program), "contract"], capture_output=True, text=True, timeout=60)
    assert json.loads(contract.stdout)["name"] == "telegram"


@pytest.fixture(scope="module")
def newer(tmp_path_factory: pytest.TempPathFactory, key: Key) -> tuple[Path, Manifest]:
    """The next release: lnk and lnk-telegram one version on, signed with the same key."""
    tree = copy_tree(tmp_path_factory.mktemp("newer") / "repo")
    for folder in ("lnk-core", "lnk-telegram"):
        bump(tree / "packages" / folder, "99.0.0")
    out = tmp_path_factory.mktemp("newer-release") / "release"
    build_release(tree, out)
    return out, sign_release(out, key.secret)


def test_upgrade_moves_lnk_and_its_plugins_to_the_newest_signed_release(
    pipx: Pipx, release: Path, newer: tuple[Path, Manifest]
) -> None:
    assert first_use(pipx, release).returncode == 0
    before = version_in(pipx, "lnk"), version_in(pipx, "lnk-telegram")
    index, manifest = newer

    moved = pipx.run(str(pipx.lnk), "upgrade", index=index)
    assert moved.returncode == 0, moved.stderr
    assert f"lnk {before[0]} -> 99.0.0" in moved.stdout
    assert f"lnk-telegram {before[1]} -> 99.0.0" in moved.stdout
    assert pipx.run(str(pipx.lnk), "--version").stdout.strip() == "lnk 99.0.0"
    assert version_in(pipx, "lnk-telegram") == "99.0.0"
    assert manifest.core == "99.0.0"

    back = pipx.run(str(pipx.lnk), "upgrade", index=release)
    assert back.returncode == 0 and "Up to date" in back.stdout
    assert version_in(pipx, "lnk") == "99.0.0"
