"""The release's secret key: minisign's file format, read from a file or LNK_RELEASE_KEY, never the repo.

A key made by `minisign -G -W` (no password) works as it is, and so does one made by
`link-release keygen`. A password-protected key is refused: remove the password from a copy
with `minisign -C -W -s <key>` for the machine that signs.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from link_plugin.errors import LinkError
from link_plugin.files import write_atomic
from lnk.signing import ALGORITHM, PREHASHED, UNTRUSTED, PublicKey, Signature, prehash

ENV_KEY = "LNK_RELEASE_KEY"
"""The secret key file's text (as CI keeps it in a secret)."""

NO_KDF = b"\0\0"
CHECKSUM = b"B2"
LENGTH = 158


class ReleaseKeyError(LinkError):
    """A secret key that can't be used, and what to do instead."""


def _checksum(key_id: bytes, secret: bytes) -> bytes:
    return hashlib.blake2b(ALGORITHM + key_id + secret, digest_size=32).digest()


@dataclass(frozen=True)
class SecretKey:
    key_id: bytes
    seed: bytes

    @classmethod
    def generate(cls) -> SecretKey:
        return cls(key_id=secrets.token_bytes(8), seed=secrets.token_bytes(32))

    @classmethod
    def parse(cls, text: str, source: str) -> SecretKey:
        lines = [line for line in text.strip().splitlines() if not line.startswith(UNTRUSTED)]
        try:
            raw = base64.b64decode(lines[0].strip(), validate=True) if len(lines) == 1 else b""
        except binascii.Error:
            raw = b""
        if len(raw) != LENGTH or raw[:2] != ALGORITHM or raw[4:6] != CHECKSUM:
            raise ReleaseKeyError(f"{source} is not a minisign secret key.", "Make one with `link-release keygen`.")
        if raw[2:4] != NO_KDF:
            raise ReleaseKeyError(
                f"{source} is protected by a password, which a release build can't type.",
                "Remove the password from a copy for the signing machine: `minisign -C -W -s <key file>`.",
            )
        key_id, secret, checksum = raw[54:62], raw[62:126], raw[126:]
        # minisign before 0.12 leaves the checksum of a key without a password empty.
        if checksum not in (_checksum(key_id, secret), bytes(32)):
            raise ReleaseKeyError(f"{source} is damaged: its checksum does not match the key.")
        key = cls(key_id=key_id, seed=secret[:32])
        if key.public_bytes() != secret[32:]:
            raise ReleaseKeyError(f"{source} is damaged: its public half does not match its secret half.")
        return key

    def public_bytes(self) -> bytes:
        public = Ed25519PrivateKey.from_private_bytes(self.seed).public_key()
        return public.public_bytes(Encoding.Raw, PublicFormat.Raw)

    @property
    def public(self) -> PublicKey:
        return PublicKey(key_id=self.key_id, key=self.public_bytes())

    def file_text(self) -> str:
        secret = self.seed + self.public_bytes()
        salt_and_limits = bytes(32 + 8 + 8)
        raw = ALGORITHM + NO_KDF + CHECKSUM + salt_and_limits + self.key_id + secret
        raw += _checksum(self.key_id, secret)
        return f"{UNTRUSTED}lnk release secret key\n{base64.b64encode(raw).decode()}\n"

    def sign(self, data: bytes, name: str) -> Signature:
        """A prehashed signature of `data`, its trusted comment naming the file as minisign's does."""
        private = Ed25519PrivateKey.from_private_bytes(self.seed)
        signature = private.sign(prehash(data))
        trusted = f"timestamp:{int(os.environ.get('SOURCE_DATE_EPOCH') or time.time())}\tfile:{name}\thashed"
        return Signature(
            algorithm=PREHASHED,
            key_id=self.key_id,
            signature=signature,
            trusted_comment=trusted,
            global_signature=private.sign(signature + trusted.encode()),
            untrusted_comment=f"signature from lnk release key {self.public.key_id_hex}",
        )


def load_key(path: Path | None, env: Mapping[str, str] | None = None) -> SecretKey:
    """The key in `path`, else in LNK_RELEASE_KEY."""
    env = os.environ if env is None else env
    if path is not None:
        try:
            return SecretKey.parse(path.read_text(), str(path))
        except OSError as exc:
            raise ReleaseKeyError(f"Can't read the secret key {path}: {exc.strerror}.") from exc
    if env.get(ENV_KEY):
        return SecretKey.parse(env[ENV_KEY], ENV_KEY)
    raise ReleaseKeyError(
        "No release key: signing needs the secret key.",
        f"Pass --key-file, or put the key file's text in {ENV_KEY} (a CI secret). It never goes in the repository.",
    )


def write_pair(key: SecretKey, secret: Path, public: Path) -> None:
    if secret.exists():
        raise ReleaseKeyError(f"{secret} exists already; keygen never overwrites a key.", "Choose another path.")
    write_atomic(secret, key.file_text(), mode=0o600)
    write_atomic(public, key.public.file_text(), mode=0o644)
