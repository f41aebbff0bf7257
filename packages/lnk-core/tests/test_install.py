"""Plugins install on first use from a signed release; anything that fails its check installs nothing.

Each test installs into an environment of its own that sees this one's packages, so nothing here
changes the environment the tests run in.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from releases import Minisign, fresh_env, write_index

from lnk.install import InstallError, one_installer
from lnk.release import ENV_INDEX
from lnk.signing import ENV_DEV_KEY

ENSURE = """
import sys
from link_plugin.errors import LinkError
from lnk.install import ensure_plugin
try:
    print(ensure_plugin(sys.argv[1]))
except LinkError as exc:
    print(exc, file=sys.stderr)
    sys.exit(1)
"""


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> Minisign:
    return Minisign.generate(tmp_path_factory.mktemp("key"))


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory, key: Minisign) -> Path:
    return write_index(tmp_path_factory.mktemp("release"), key, {"lnk-demo": "0.1.0", "lnk-other": "0.1.0"})


def environment(tmp_path: Path, key: Minisign, index: str | None) -> dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "LNK_CONFIG_DIR": str(tmp_path / "config"),
        ENV_DEV_KEY: str(key.public),
    }
    return {**env, ENV_INDEX: index} if index else env


def ensure(python: Path, executable: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-c", ENSURE, executable], capture_output=True, text=True, env=env, timeout=300)


def installed(python: Path) -> bool:
    """Whether lnk-demo is anywhere in the environment: its program, or its files."""
    env = python.parent.parent
    return (env / "bin" / "lnk-demo").exists() or any(env.glob("lib/python*/site-packages/lnk_demo*"))


def contract(program: Path) -> dict[str, object]:
    done = subprocess.run([str(program), "contract"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def test_first_use_installs_the_plugin_into_lnks_environment(tmp_path: Path, release: Path, key: Minisign) -> None:
    python = fresh_env(tmp_path / "env")
    env = environment(tmp_path, key, str(release))
    done = ensure(python, "lnk-demo", env)
    assert done.returncode == 0, done.stderr
    program = Path(done.stdout.strip())
    assert program == tmp_path / "env" / "bin" / "lnk-demo"
    assert "Installing lnk-demo 0.1.0" in done.stderr
    assert contract(program)["release"] == "0.1.0"
    assert not (tmp_path / "env" / "bin" / "lnk-other").exists()

    again = ensure(python, "lnk-demo", env)
    assert again.returncode == 0 and Path(again.stdout.strip()) == program
    assert "Installing" not in again.stderr


HOLD = """
import sys
from lnk.install import one_installer
with one_installer():
    print("installing", flush=True)
    sys.stdin.readline()
"""


def test_homes_sharing_one_lnk_take_turns_installing(tmp_path: Path, release: Path, key: Minisign) -> None:
    """Two homes (config folders) using one lnk install into one environment: one waits for the other."""
    python = fresh_env(tmp_path / "env")
    first = subprocess.Popen(
        [str(python), "-c", HOLD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=environment(tmp_path / "first", key, str(release)),
    )
    said = tmp_path / "second.err"
    with said.open("w") as err:
        second = subprocess.Popen(
            [str(python), "-c", ENSURE, "lnk-demo"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=environment(tmp_path / "second", key, str(release)),
        )
    try:
        assert first.stdout is not None and first.stdout.readline() == "installing\n"
        with pytest.raises(subprocess.TimeoutExpired):
            second.wait(timeout=3)
        assert "Installing" not in said.read_text() and not installed(python)
        first.communicate("\n", timeout=30)
        out, _ = second.communicate(timeout=300)
        assert second.returncode == 0, said.read_text()
        assert "Installing lnk-demo 0.1.0" in said.read_text()
        assert Path(out.strip()) == tmp_path / "env" / "bin" / "lnk-demo"
    finally:
        for process in (first, second):
            process.kill()
            process.wait()


def test_an_environment_lnk_cant_write_says_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "gone"))
    with pytest.raises(InstallError) as raised, one_installer():
        pass
    assert str(tmp_path / "gone") in raised.value.message and "pipx" in (raised.value.hint or "")


@pytest.fixture
def served(release: Path) -> Iterator[str]:
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(release))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/"
    finally:
        server.shutdown()
        server.server_close()


def test_first_use_installs_from_a_url_given_as_pip_would_take_it(tmp_path: Path, served: str, key: Minisign) -> None:
    python = fresh_env(tmp_path / "env")
    done = ensure(python, "lnk-demo", environment(tmp_path, key, served))
    assert done.returncode == 0, done.stderr
    assert contract(Path(done.stdout.strip()))["name"] == "demo"


def test_machine_toml_names_the_index(tmp_path: Path, release: Path, key: Minisign) -> None:
    python = fresh_env(tmp_path / "env")
    env = environment(tmp_path, key, None)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "machine.toml").write_text(f"index = {json.dumps(str(release))}\n")
    done = ensure(python, "lnk-demo", env)
    assert done.returncode == 0, done.stderr


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x20
    path.write_bytes(bytes(data))


def tamper_wheel(release: Path, key: Minisign) -> None:
    _flip_a_byte(next((release / "files").glob("lnk_demo-*.whl")))


def sign_wheel_with_another_key(release: Path, key: Minisign) -> None:
    Minisign.generate(release / "other").sign(next((release / "files").glob("lnk_demo-*.whl")))


def sign_manifest_with_another_key(release: Path, key: Minisign) -> None:
    Minisign.generate(release / "other").sign(release / "manifest.json")


def tamper_wheel_and_manifest(release: Path, key: Minisign) -> None:
    """One byte changed in the wheel, and the manifest's SHA-256 changed to match, without its key."""
    import hashlib

    wheel = next((release / "files").glob("lnk_demo-*.whl"))
    before = hashlib.sha256(wheel.read_bytes()).hexdigest()
    _flip_a_byte(wheel)
    manifest = release / "manifest.json"
    manifest.write_text(manifest.read_text().replace(before, hashlib.sha256(wheel.read_bytes()).hexdigest()))


@pytest.mark.parametrize(
    "break_release",
    [tamper_wheel, sign_wheel_with_another_key, sign_manifest_with_another_key, tamper_wheel_and_manifest],
)
def test_a_release_that_fails_its_check_installs_nothing(
    tmp_path: Path, release: Path, key: Minisign, break_release: Callable[[Path, Minisign], None]
) -> None:
    broken = tmp_path / "release"
    shutil.copytree(release, broken)
    break_release(broken, key)
    python = fresh_env(tmp_path / "env")
    done = ensure(python, "lnk-demo", environment(tmp_path, key, str(broken)))
    assert done.returncode == 1
    assert f"Refused the release at {broken}" in done.stderr
    assert "lnk installs nothing from it" in done.stderr
    assert not installed(python)


def test_without_the_developer_key_the_pinned_key_refuses_a_test_release(
    tmp_path: Path, release: Path, key: Minisign
) -> None:
    python = fresh_env(tmp_path / "env")
    env = environment(tmp_path, key, str(release))
    del env[ENV_DEV_KEY]
    done = ensure(python, "lnk-demo", env)
    assert done.returncode == 1
    assert "not Link's release key" in done.stderr
    assert not installed(python)


def test_a_plugin_the_release_lacks_says_what_to_do(tmp_path: Path, release: Path, key: Minisign) -> None:
    python = fresh_env(tmp_path / "env")
    done = ensure(python, "lnk-nowhere", environment(tmp_path, key, str(release)))
    assert done.returncode == 1
    assert "lnk-nowhere is not installed, and no distribution in Link's release" in done.stderr
    assert "on PATH" in done.stderr


def test_a_plugin_on_path_is_used_without_reading_the_index(tmp_path: Path, key: Minisign) -> None:
    python = fresh_env(tmp_path / "env")
    own = tmp_path / "bin"
    own.mkdir()
    (own / "lnk-demo").write_text("#!/bin/sh\n")
    (own / "lnk-demo").chmod(0o755)
    env = environment(tmp_path, key, str(tmp_path / "no-such-index"))
    env["PATH"] = f"{own}:{env['PATH']}"
    done = ensure(python, "lnk-demo", env)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == own / "lnk-demo"


def test_an_unreachable_index_says_where_it_looked(tmp_path: Path, key: Minisign) -> None:
    python = fresh_env(tmp_path / "env")
    done = ensure(python, "lnk-demo", environment(tmp_path, key, str(tmp_path / "no-such-index")))
    assert done.returncode == 1
    assert f"Can't read manifest.json from Link's release index at {tmp_path / 'no-such-index'}" in done.stderr
    assert ENV_INDEX in done.stderr


def upgrade(python: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "lnk", "upgrade"], capture_output=True, text=True, env=env, timeout=300)


def test_upgrade_moves_installed_plugins_forward_and_never_back(tmp_path: Path, release: Path, key: Minisign) -> None:
    newer = write_index(tmp_path / "newer", key, {"lnk-demo": "0.2.0", "lnk-other": "0.2.0"})
    python = fresh_env(tmp_path / "env")
    program = Path(ensure(python, "lnk-demo", environment(tmp_path, key, str(release))).stdout.strip())

    moved = upgrade(python, environment(tmp_path, key, str(newer)))
    assert moved.returncode == 0, moved.stderr
    assert moved.stdout.strip() == "lnk-demo 0.1.0 -> 0.2.0"
    assert contract(program)["release"] == "0.2.0"
    assert not (tmp_path / "env" / "bin" / "lnk-other").exists()

    again = upgrade(python, environment(tmp_path, key, str(newer)))
    assert again.returncode == 0 and "Up to date" in again.stdout
    back = upgrade(python, environment(tmp_path, key, str(release)))
    assert back.returncode == 0 and "Up to date" in back.stdout
    assert contract(program)["release"] == "0.2.0"


def test_upgrade_refuses_a_tampered_release_and_moves_nothing(tmp_path: Path, release: Path, key: Minisign) -> None:
    newer = write_index(tmp_path / "newer", key, {"lnk-demo": "0.2.0"})
    tamper_wheel(newer, key)
    python = fresh_env(tmp_path / "env")
    program = Path(ensure(python, "lnk-demo", environment(tmp_path, key, str(release))).stdout.strip())
    refused = upgrade(python, environment(tmp_path, key, str(newer)))
    assert refused.returncode == 1
    assert "Refused the release" in refused.stderr
    assert contract(program)["release"] == "0.1.0"
