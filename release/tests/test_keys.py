"""The secret key comes from a file or LNK_RELEASE_KEY, in minisign's format; minisign and lnk agree."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from link_release.keys import ENV_KEY, ReleaseKeyError, SecretKey, load_key, write_pair
from lnk.signing import verify


def test_a_key_made_by_minisign_signs_what_lnk_and_minisign_accept(tmp_path: Path) -> None:
    secret, public = tmp_path / "m.key", tmp_path / "m.pub"
    subprocess.run(["minisign", "-G", "-W", "-p", str(public), "-s", str(secret)], check=True, capture_output=True)
    key = load_key(secret, {})
    data = tmp_path / "file.whl"
    data.write_bytes(b"wheel")
    signature = key.sign(data.read_bytes(), data.name).file_text()
    (tmp_path / "file.whl.minisig").write_text(signature)
    done = subprocess.run(["minisign", "-V", "-p", str(public), "-m", str(data)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    trusted = verify(data.read_bytes(), signature, data.name, key.public)
    assert trusted.startswith("timestamp:") and trusted.endswith("\tfile:file.whl\thashed")


def test_a_key_made_here_signs_with_minisign_too(tmp_path: Path) -> None:
    key = SecretKey.generate()
    write_pair(key, tmp_path / "k.key", tmp_path / "k.pub")
    assert (tmp_path / "k.key").stat().st_mode & 0o777 == 0o600
    data = tmp_path / "file"
    data.write_bytes(b"anything")
    for command in (["-S", "-s", str(tmp_path / "k.key")], ["-V", "-p", str(tmp_path / "k.pub")]):
        done = subprocess.run(["minisign", *command, "-m", str(data)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_the_key_can_come_from_the_environment(tmp_path: Path) -> None:
    key = SecretKey.generate()
    assert load_key(None, {ENV_KEY: key.file_text()}) == key


def test_no_key_says_where_one_goes() -> None:
    with pytest.raises(ReleaseKeyError) as caught:
        load_key(None, {})
    assert "--key-file" in str(caught.value) and ENV_KEY in str(caught.value)
    assert "never goes in the repository" in str(caught.value)


def _raw(key: SecretKey) -> bytearray:
    return bytearray(base64.b64decode(key.file_text().splitlines()[1]))


def _text(raw: bytearray) -> str:
    return f"untrusted comment: k\n{base64.b64encode(bytes(raw)).decode()}\n"


def test_a_key_with_a_password_is_refused_with_how_to_remove_it() -> None:
    raw = _raw(SecretKey.generate())
    raw[2:4] = b"Sc"
    with pytest.raises(ReleaseKeyError, match="protected by a password") as caught:
        SecretKey.parse(_text(raw), "key")
    assert "minisign -C -W" in str(caught.value)


def test_a_damaged_key_is_refused() -> None:
    raw = _raw(SecretKey.generate())
    raw[70] ^= 1
    with pytest.raises(ReleaseKeyError, match="damaged"):
        SecretKey.parse(_text(raw), "key")
    with pytest.raises(ReleaseKeyError, match="not a minisign secret key"):
        SecretKey.parse("RWQ this is not a key", "key")


def test_keygen_never_overwrites_a_key(tmp_path: Path) -> None:
    (tmp_path / "k.key").write_text("the old key")
    with pytest.raises(ReleaseKeyError, match="never overwrites"):
        write_pair(SecretKey.generate(), tmp_path / "k.key", tmp_path / "k.pub")
    assert (tmp_path / "k.key").read_text() == "the old key"
