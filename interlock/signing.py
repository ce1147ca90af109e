"""Ed25519 signatures over journal checkpoints and receipt bundles."""

from __future__ import annotations

from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from .canonical import canonical_bytes


def generate_key() -> Ed25519PrivateKey:
    """A fresh signing key; keep it away from the journal, or a writer of the file can re-sign it."""
    return Ed25519PrivateKey.generate()


def public_hex(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The raw public key as hex, the form receipts and checkpoints carry."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def sign(key: Ed25519PrivateKey, statement: Any) -> dict[str, str]:
    """Sign a JSON statement's canonical bytes."""
    return {"public_key": public_hex(key), "value": key.sign(canonical_bytes(statement)).hex()}


def signature_holds(signature: Any, statement: Any, public_key: str) -> bool:
    """Whether `signature` is the holder of `public_key` signing `statement`; never raises."""
    if not isinstance(signature, dict) or signature.get("public_key") != public_key:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key)).verify(
            bytes.fromhex(str(signature.get("value"))), canonical_bytes(statement))
    except (InvalidSignature, ValueError):
        return False
    return True


def checkpoint_statement(seq: int, head: str | None) -> dict[str, Any]:
    """What a checkpoint signs: the journal held exactly this many entries, ending in this hash."""
    return {"statement": "interlock journal checkpoint", "seq": seq, "head": head}
