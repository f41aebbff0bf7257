"""The proof: that the program on an endpoint's port holds the agent's endpoint key.

A bridge first sends `POST /_link/proof` with `{"challenge": <64 hex>}` (`wire.ProofRequest`);
the endpoint answers `{"proof": <hex HMAC-SHA256 of the challenge under the key>}`
(`wire.ProofAnswer`). The proof is a signature of the challenge, never the key, so asking for one
gives nothing away. The check is `link_plugin.endpoint`'s, before each message.

The two bodies are read and written here as plain JSON, exactly as their models in
`link_plugin.wire` read them (the tests hold the two together): the client checks the proof on a
path that loads no pydantic.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets

PROOF_PATH = "/_link/proof"
CHALLENGE_BYTES = 32


def new_challenge() -> str:
    return secrets.token_hex(CHALLENGE_BYTES)


def prove(key: str, challenge: str) -> str:
    """The endpoint's answer to a challenge: hex HMAC-SHA256 of it under the endpoint key."""
    return hmac.new(key.encode(), challenge.encode(), hashlib.sha256).hexdigest()


def proof_holds(key: str, challenge: str, answer: str) -> bool:
    """The bridge's check, in constant time."""
    return hmac.compare_digest(prove(key, challenge), answer)


def new_endpoint_key() -> str:
    return secrets.token_urlsafe(32)


def request_body(challenge: str) -> bytes:
    """The body of `POST /_link/proof`, as `wire.ProofRequest` writes it."""
    return json.dumps({"challenge": challenge}, separators=(",", ":")).encode()


def answered_proof(body: bytes) -> str | None:
    """The proof an endpoint's answer carries, read as `wire.ProofAnswer` reads it (a JSON object
    whose `proof` is a string; other keys are left alone); None when it doesn't read so."""
    try:
        found = json.loads(body.decode())
    except ValueError:  # not JSON, or not UTF-8
        return None
    proof = found.get("proof") if isinstance(found, dict) else None
    return proof if isinstance(proof, str) else None
