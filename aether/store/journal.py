"""Reading the journal stream (``ns:journal``) written by the Functions library.

Each entry holds ``a`` (actor), ``r`` (reason), ``i`` (the ops that undo it, in
application order, msgpack) and what was applied: ``f`` (the ops with their values,
msgpack) while a PostgreSQL archive follows the namespace, else only ``k`` (the keys
touched, msgpack), since rollback and undo need the inverses alone and a memory's vector
need not be stored twice. A rollback entry also holds ``to`` (the checkpoint it returned
to).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import msgpack
from redis.asyncio import Redis

from aether.codec import byte_map, text
from aether.errors import StoreError
from aether.store.state import decode_ops


def touched_keys(fields: dict[bytes, bytes]) -> list[bytes]:
    """The keys an entry's ops touched, in order of first touch (from ``f`` or ``k``)."""
    if b"k" in fields:
        keys = msgpack.unpackb(fields[b"k"], raw=True)
        return list(keys) if isinstance(keys, list) else []  # Lua packs {} as a map
    return list(dict.fromkeys(op[1] for op in decode_ops(fields.get(b"f", b"\x90"))))


@dataclass(frozen=True)
class JournalEntry:
    """One journal entry."""

    id: str
    fields: dict[bytes, bytes]

    @property
    def ms(self) -> int:
        """Milliseconds part of the stream id (when it was written)."""
        return int(self.id.split("-", 1)[0])

    @property
    def seq(self) -> int:
        """Sequence part of the stream id."""
        return int(self.id.split("-", 1)[1])

    @property
    def actor(self) -> str:
        """Who made the change."""
        return self.fields.get(b"a", b"").decode()

    @property
    def reason(self) -> str:
        """What the change was."""
        return self.fields.get(b"r", b"").decode()

    def forward(self) -> list[list[bytes]]:
        """The ops applied, with their values.

        Raises:
            StoreError: the entry was written while no archive followed the namespace,
                so it keeps only the keys it touched.
        """
        if b"f" not in self.fields:
            raise StoreError(f"journal entry {self.id} keeps only the keys it touched")
        return decode_ops(self.fields[b"f"])

    def inverse(self) -> list[list[bytes]]:
        """The ops that undo it, in application order."""
        return decode_ops(self.fields[b"i"])

    def touched_keys(self) -> list[str]:
        """The keys it touched, in order of first touch."""
        return [key.decode() for key in touched_keys(self.fields)]


def compare_ids(a: str, b: str) -> int:
    """Compare two stream ids: -1, 0 or 1."""
    ta = tuple(int(x) for x in a.split("-", 1))
    tb = tuple(int(x) for x in b.split("-", 1))
    return (ta > tb) - (ta < tb)


async def entries_after(
    client: Redis, journal_key: str, position: str, batch: int = 1000, until: str = "+"
) -> AsyncIterator[JournalEntry]:
    """Yield the entries after ``position`` (exclusive) up to ``until``, oldest first."""
    lower = f"({position}"
    while True:
        page = await client.xrange(journal_key, min=lower, max=until, count=batch)
        if not page:
            return
        for raw_id, fields in page:
            entry_id = text(raw_id)
            yield JournalEntry(entry_id, byte_map(fields))
            lower = f"({entry_id}"
        if len(page) < batch:
            return


async def last_position(client: Redis, journal_key: str) -> str:
    """The id of the newest entry, or ``0-0`` when the journal is empty."""
    last = await client.xrevrange(journal_key, count=1)
    if not last:
        return "0-0"
    return text(last[0][0])
