"""An exact image of a namespace's journaled state: what a rollback must restore.

Used to check the rollback contract (the property tests, ``bench/chaos.py``): two
images compare equal when every state key is byte-identical.
"""

from __future__ import annotations

from redis.asyncio import Redis

from aether.keys import Keyspace

__all__ = ["state_image"]


async def state_image(client: Redis, keys: Keyspace) -> dict[bytes, object]:
    """Image of every journaled-state key of a namespace.

    DUMP bytes for every encoding with a defined order (listpack, intset, quicklist,
    skiplist, strings, JSON). Hash-table-encoded hashes and sets serialise in bucket
    order, which Redis changes on its own (incremental rehashing advances even on reads),
    so for those the image is the encoding plus the sorted content.

    Args:
        client: a client of the server.
        keys: the namespace's keyspace.

    Returns:
        key -> DUMP bytes, or ``("hashtable", type, sorted content)``.
    """
    image: dict[bytes, object] = {}
    async for key in client.scan_iter(match=keys.every_key, count=1000):
        name = key.decode()
        if not keys.is_state(name):
            continue
        encoding = await client.object("encoding", name)
        if encoding in (b"hashtable", "hashtable"):
            kind = await client.type(name)
            if kind == b"hash":
                content: object = sorted((await client.hgetall(name)).items())
            else:
                content = sorted(await client.smembers(name))
            image[key] = ("hashtable", kind, content)
        else:
            image[key] = await client.dump(name)
    return image
