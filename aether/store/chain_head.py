"""The journal chain's head: ``"<entry id> <hash>"``, kept with the state keys' digests.

Since journal library 25 the head is a field (:data:`HEAD_FIELD`) of the digests hash
(``journal:digests``), so a change reads the head and the digests it extends in one call and
writes both in one (a key of its own cost a read and a write more per change). No state key
can be named ``(head)``: they all start with the namespace's prefix. A journal written by an
older library keeps its head in ``journal:head`` until its next entry moves it: readers fall
back to it, writers retire it.
"""

from __future__ import annotations

from redis.asyncio import Redis

from aether.codec import text
from aether.keys import Keyspace

__all__ = ["HEAD_FIELD", "head_of", "read_head", "write_head"]

HEAD_FIELD = "(head)"


def head_of(raw: bytes | str | None) -> tuple[str, str] | None:
    """A stored head's (entry id, hash), or ``None`` for none."""
    if raw is None:
        return None
    entry, _, digest = text(raw).partition(" ")
    return entry, digest


async def read_head(client: Redis, keys: Keyspace) -> tuple[str, str] | None:
    """The head: (entry id, hash), or ``None`` before the first chained entry."""
    raw = await client.hget(keys.journal_digests(), HEAD_FIELD)
    if raw is None:
        raw = await client.get(keys.journal_legacy_head())
    return head_of(raw)


async def write_head(client: Redis, keys: Keyspace, entry: str, digest: str) -> None:
    """Move the head (an erasure's re-chain, a restore's rebase), retiring a legacy key."""
    async with client.pipeline(transaction=True) as pipe:
        pipe.hset(keys.journal_digests(), HEAD_FIELD, f"{entry} {digest}")
        pipe.delete(keys.journal_legacy_head())
        await pipe.execute()
