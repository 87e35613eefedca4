"""The erasure's text kept sealed while it runs: Redis holds a ciphertext, a file the key.

An erasure that a crash cuts short is finished later (by ``aether up`` or
``aether erase resume``), and finishing needs the text. Keeping it in Redis in plain text
would leave the very text being erased in the write hold, the AOF and ``erase verify``'s
findings. So the hold keeps the text sealed: XOR with a SHAKE-256 keystream of a random
32-byte key and a per-text nonce. The key is a file (0600) under ``AETHER_HOME/erasures``,
outside Redis and its data directory, removed when the erasure is done: neither half alone
gives the text back, and once the erasure finishes neither is left.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from aether.errors import InvalidOperationError

__all__ = ["EraseKey", "seal", "unseal"]

KEY_BYTES = 32
NONCE_BYTES = 16


def _stream(key: bytes, nonce: bytes, length: int) -> bytes:
    return hashlib.shake_256(key + nonce).digest(length)


def seal(key: bytes, plain: str) -> str:
    """``plain`` sealed with ``key`` (hex of nonce and ciphertext)."""
    nonce = secrets.token_bytes(NONCE_BYTES)
    data = plain.encode()
    body = bytes(a ^ b for a, b in zip(data, _stream(key, nonce, len(data)), strict=True))
    return (nonce + body).hex()


def unseal(key: bytes, sealed: str) -> str:
    """The text :func:`seal` sealed.

    Raises:
        InvalidOperationError: ``sealed`` is not a sealed text.
    """
    try:
        raw = bytes.fromhex(sealed)
    except ValueError as e:
        raise InvalidOperationError("the erasure's sealed text is damaged") from e
    nonce, body = raw[:NONCE_BYTES], raw[NONCE_BYTES:]
    stream = _stream(key, nonce, len(body))
    try:
        return bytes(a ^ b for a, b in zip(body, stream, strict=True)).decode()
    except UnicodeDecodeError as e:
        raise InvalidOperationError("the erasure's key does not open its sealed text") from e


class EraseKey:
    """The key file of one erasure.

    Args:
        folder: where the keys live (``AETHER_HOME/erasures``).
        namespace: the namespace erased.
        erasure_id: the erasure.
    """

    def __init__(self, folder: Path, namespace: str, erasure_id: str) -> None:
        self.path = folder / f"{namespace}.{erasure_id}.key"

    def create(self) -> bytes:
        """A new key, written 0600 and fsync'd before the hold names it."""
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = secrets.token_bytes(KEY_BYTES)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, key)
            os.fsync(fd)
        finally:
            os.close(fd)
        return key

    def read(self) -> bytes | None:
        """The key, or ``None`` when its file is gone (another machine, removed by hand)."""
        try:
            key = self.path.read_bytes()
        except FileNotFoundError:
            return None
        return key if len(key) == KEY_BYTES else None

    def remove(self) -> None:
        """Remove the key (the erasure is done)."""
        self.path.unlink(missing_ok=True)
