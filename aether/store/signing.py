"""The key that signs the journal's chain head, read from a file only its owner can read.

The key never reaches Redis: the process that writes signs the head it left
(:func:`sign_head`: HMAC-SHA256 of ``"<entry id> <hash>"``), so a forger with Redis
access who rewrites entries and recomputes every hash still cannot sign the new head.
"""

from __future__ import annotations

import hashlib
import hmac
import stat
from pathlib import Path

from redis.asyncio import Redis
from redis.exceptions import WatchError

from aether.config import Settings
from aether.errors import ConfigError
from aether.keys import Keyspace
from aether.store.chain_head import read_head

__all__ = ["Signer", "sign_head"]

MIN_KEY_BYTES = 16


class Signer:
    """Signs and checks chain heads with one secret key.

    Args:
        key: the secret (at least 16 bytes).

    Raises:
        ConfigError: the key is too short.
    """

    def __init__(self, key: bytes) -> None:
        if len(key) < MIN_KEY_BYTES:
            raise ConfigError(f"the journal key must be at least {MIN_KEY_BYTES} bytes")
        self._key = key

    @classmethod
    def from_file(cls, path: Path) -> Signer:
        """The key in ``path``, which only its owner may read or write (mode 0600).

        Raises:
            ConfigError: the file is missing, readable by others, or too short.
        """
        try:
            mode = path.stat().st_mode
        except OSError as e:
            raise ConfigError(f"journal key {path}: {e.strerror or e}") from e
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(
                f"journal key {path} is readable by others (mode {stat.S_IMODE(mode):o}); "
                f"chmod 600 {path}"
            )
        return cls(path.read_bytes().strip())

    @classmethod
    def from_settings(cls, settings: Settings) -> Signer | None:
        """The configured key (``AETHER_JOURNAL__KEY``), or ``None`` when none is set."""
        path = settings.journal.key
        return cls.from_file(path) if path is not None else None

    def mac(self, entry: str, digest: str) -> str:
        """The signature of a head."""
        message = f"{entry} {digest}".encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def verifies(self, entry: str, digest: str, mac: str) -> bool:
        """Whether ``mac`` is this key's signature of the head (constant time)."""
        return hmac.compare_digest(self.mac(entry, digest), mac)


async def sign_head(client: Redis, keys: Keyspace, signer: Signer) -> None:
    """Sign the chain's current head, unless it moves meanwhile (its writer signs that one)."""
    async with client.pipeline(transaction=True) as pipe:
        try:
            await pipe.watch(keys.journal_digests(), keys.journal_legacy_head())
            head = await read_head(pipe, keys)
            if head is None:
                return
            entry, digest = head
            pipe.multi()  # type: ignore[no-untyped-call]
            pipe.hset(
                keys.journal_signature(),
                mapping={"id": entry, "h": digest, "mac": signer.mac(entry, digest)},
            )
            await pipe.execute()
        except WatchError:
            return
