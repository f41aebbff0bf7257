"""lnk checks minisign signatures in Python: what the real `minisign` signs holds, anything changed fails."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from releases import Minisign

from lnk.signing import ENV_DEV_KEY, PUBLIC_KEY, PublicKey, SignatureError, release_key, verify


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> Minisign:
    return Minisign.generate(tmp_path_factory.mktemp("key"))


@pytest.fixture
def signed(tmp_path: Path, key: Minisign) -> Path:
    path = tmp_path / "lnk_demo-0.1.0-py3-none-any.whl"
    path.write_bytes(b"a wheel's bytes" * 1000)
    key.sign(path)
    return path


def check(path: Path, key: Minisign, signature: Path | None = None) -> str:
    text = (signature or path.with_name(path.name + ".minisig")).read_text()
    return verify(path.read_bytes(), text, path.name, PublicKey.parse(key.public.read_text()))


def test_a_minisign_signature_holds_and_gives_its_trusted_comment(signed: Path, key: Minisign) -> None:
    assert check(signed, key) == f"file:{signed.name}"


def test_a_legacy_signature_of_the_whole_file_holds(signed: Path, key: Minisign) -> None:
    key.sign(signed, legacy=True)
    assert check(signed, key) == f"file:{signed.name}"


def test_one_changed_byte_fails(signed: Path, key: Minisign) -> None:
    data = bytearray(signed.read_bytes())
    data[len(data) // 2] ^= 1
    signed.write_bytes(bytes(data))
    with pytest.raises(SignatureError, match="changed after it was signed"):
        check(signed, key)


def test_another_key_fails_naming_both(signed: Path, key: Minisign, tmp_path: Path) -> None:
    other = Minisign.generate(tmp_path / "other")
    other.sign(signed)
    ours = PublicKey.parse(key.public.read_text())
    with pytest.raises(SignatureError, match=f"not Link's release key {ours.key_id_hex}"):
        check(signed, key)


def test_a_changed_trusted_comment_fails(signed: Path, key: Minisign) -> None:
    signature = signed.with_name(signed.name + ".minisig")
    lines = signature.read_text().splitlines()
    lines[2] = "trusted comment: file:something-else.whl"
    signature.write_text("\n".join(lines) + "\n")
    with pytest.raises(SignatureError, match="changed after it was signed"):
        check(signed, key)


def test_a_file_that_is_no_signature_says_so(signed: Path, key: Minisign) -> None:
    signed.with_name(signed.name + ".minisig").write_text("<html>404</html>\n")
    with pytest.raises(SignatureError, match="not a minisign signature file"):
        check(signed, key)


def test_minisign_reads_the_public_key_as_lnk_writes_it(signed: Path, key: Minisign, tmp_path: Path) -> None:
    written = tmp_path / "written.pub"
    written.write_text(PublicKey.parse(key.public.read_text()).file_text())
    done = subprocess.run(["minisign", "-V", "-p", str(written), "-m", str(signed)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_pinned_key_is_used_unless_the_developer_setting_is_given(
    key: Minisign, capsys: pytest.CaptureFixture[str]
) -> None:
    assert release_key({}) == PublicKey.parse(PUBLIC_KEY)
    assert capsys.readouterr().err == ""
    ours = PublicKey.parse(key.public.read_text())
    assert release_key({ENV_DEV_KEY: str(key.public)}) == ours
    assert release_key({ENV_DEV_KEY: ours.line}) == ours
    assert f"developer key {ours.key_id_hex} from {ENV_DEV_KEY}" in capsys.readouterr().err


def test_a_bad_developer_key_names_the_setting() -> None:
    with pytest.raises(SignatureError, match=ENV_DEV_KEY):
        release_key({ENV_DEV_KEY: "not a key"})
