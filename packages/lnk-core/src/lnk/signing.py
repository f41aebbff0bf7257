"""Checking Link's release signatures: minisign format (Ed25519), with the public key pinned here.

A signature file (`<file>.minisig`) is four lines: an untrusted comment, the signature of the
file's BLAKE2b-512 hash (algorithm `ED`; the older `Ed` signs the file itself), a trusted comment,
and a signature of the first signature followed by the trusted comment. Anyone can check one with
`minisign -Vm <file> -P <PUBLIC_KEY>`.

LNK_DEV_PUBLIC_KEY replaces the pinned key for tests and for developers checking a release signed
with a key of their own: it holds a minisign public key, or the path of a `.pub` file. Nothing
else can replace it, and lnk says so on stderr whenever it is used.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from link_plugin.errors import LinkError

PUBLIC_KEY = "RWQR4lWWxgwiMsieAmpOhqvLm8SmnNNy9IMZ6btoeWI8juIuc27AT4PI"
"""Link's release key. The secret half signs every release and never sits in the repository."""

ENV_DEV_KEY = "LNK_DEV_PUBLIC_KEY"
SUFFIX = ".minisig"

ALGORITHM = b"Ed"
PREHASHED = b"ED"
UNTRUSTED = "untrusted comment: "
TRUSTED = "trusted comment: "


class SignatureError(LinkError):
    """A signature that does not hold: the file is not what Link released."""


def _decode(line: str, length: int, what: str) -> bytes:
    try:
        raw = base64.b64decode(line.strip(), validate=True)
    except binascii.Error as exc:
        raise SignatureError(f"The {what} is not valid base64.") from exc
    if len(raw) != length:
        raise SignatureError(f"The {what} is {len(raw)} bytes long; a minisign {what} has {length}.")
    return raw


def prehash(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=64).digest()


@dataclass(frozen=True)
class PublicKey:
    key_id: bytes
    key: bytes

    @classmethod
    def parse(cls, text: str) -> PublicKey:
        """A public key file's text, or just its base64 line."""
        lines = [line for line in text.strip().splitlines() if not line.startswith(UNTRUSTED)]
        if len(lines) != 1:
            raise SignatureError("A minisign public key is one base64 line (after an optional untrusted comment).")
        raw = _decode(lines[0], 42, "public key")
        if raw[:2] != ALGORITHM:
            raise SignatureError("The public key is not an Ed25519 minisign key.")
        return cls(key_id=raw[2:10], key=raw[10:])

    @property
    def line(self) -> str:
        return base64.b64encode(ALGORITHM + self.key_id + self.key).decode()

    @property
    def key_id_hex(self) -> str:
        """The key ID as minisign prints it."""
        return self.key_id[::-1].hex().upper()

    def file_text(self) -> str:
        return f"{UNTRUSTED}minisign public key {self.key_id_hex}\n{self.line}\n"

    def verify(self, data: bytes, signature: Signature, name: str) -> str:
        """Check `data` (called `name` in errors) against a signature; return the trusted comment."""
        if signature.key_id != self.key_id:
            raise SignatureError(
                f"{name} is signed with key {signature.key_id[::-1].hex().upper()}, not Link's release key "
                f"{self.key_id_hex}."
            )
        key = Ed25519PublicKey.from_public_bytes(self.key)
        signed = prehash(data) if signature.algorithm == PREHASHED else data
        try:
            key.verify(signature.signature, signed)
            key.verify(signature.global_signature, signature.signature + signature.trusted_comment.encode())
        except InvalidSignature as exc:
            raise SignatureError(f"{name} does not match its signature: it was changed after it was signed.") from exc
        return signature.trusted_comment


@dataclass(frozen=True)
class Signature:
    algorithm: bytes
    key_id: bytes
    signature: bytes
    trusted_comment: str
    global_signature: bytes
    untrusted_comment: str = "signature from the lnk release key"

    @classmethod
    def parse(cls, text: str, name: str = "signature") -> Signature:
        lines = text.strip("\n").splitlines()
        if len(lines) != 4 or not lines[0].startswith(UNTRUSTED) or not lines[2].startswith(TRUSTED):
            raise SignatureError(f"{name} is not a minisign signature file (four lines, two of them comments).")
        raw = _decode(lines[1], 74, "signature")
        if raw[:2] not in (ALGORITHM, PREHASHED):
            raise SignatureError(f"{name} is not an Ed25519 minisign signature.")
        return cls(
            algorithm=raw[:2],
            key_id=raw[2:10],
            signature=raw[10:],
            trusted_comment=lines[2].removeprefix(TRUSTED),
            global_signature=_decode(lines[3], 64, "trusted comment signature"),
            untrusted_comment=lines[0].removeprefix(UNTRUSTED),
        )

    def file_text(self) -> str:
        return (
            f"{UNTRUSTED}{self.untrusted_comment}\n"
            f"{base64.b64encode(self.algorithm + self.key_id + self.signature).decode()}\n"
            f"{TRUSTED}{self.trusted_comment}\n"
            f"{base64.b64encode(self.global_signature).decode()}\n"
        )


def release_key(env: Mapping[str, str] | None = None) -> PublicKey:
    """The key releases are checked with: the pinned one, unless LNK_DEV_PUBLIC_KEY says otherwise."""
    env = os.environ if env is None else env
    override = env.get(ENV_DEV_KEY)
    if not override:
        return PublicKey.parse(PUBLIC_KEY)
    text = Path(override).read_text() if os.path.isfile(override) else override
    try:
        key = PublicKey.parse(text)
    except SignatureError as exc:
        raise SignatureError(f"{ENV_DEV_KEY}: {exc.message}", "Unset it to use Link's own release key.") from exc
    print(f"lnk: checking releases with the developer key {key.key_id_hex} from {ENV_DEV_KEY}.", file=sys.stderr)
    return key


def verify(data: bytes, signature_text: str, name: str, key: PublicKey) -> str:
    """Check a file's bytes against the text of its .minisig; return the trusted comment."""
    return key.verify(data, Signature.parse(signature_text, f"the signature of {name}"), name)
