"""A stream rebuilt in place keeps its ids, groups, consumers and pending entries (issue 53).

The inbox has a consumer group as soon as a daemon ran, with entries pending while it
answers them; an erasure rebuilds it. The extended ``XPENDING`` reply once crashed the
rebuild (redis-py parsed it as the summary form), leaving the namespace held.
"""

from __future__ import annotations

from redis.asyncio import Redis

from aether.keys import Keyspace
from aether.store.streams import Fields, rebuild_stream


async def _pending(client: Redis, name: str, group: str) -> list[tuple[str, str, int]]:
    found = await client.xpending_range(name, group, min="-", max="+", count=1000)
    return [(p["message_id"].decode(), p["consumer"].decode(), p["times_delivered"]) for p in found]


async def test_groups_consumers_and_pending_entries_survive_a_rebuild(
    client: Redis, keys: Keyspace
) -> None:
    name = keys.inbox()
    ids = [await client.xadd(name, {"content": f"message {i}"}) for i in range(6)]
    await client.xgroup_create(name, "daemon", id="0")
    await client.xgroup_create(name, "audit", id="$")
    await client.xreadgroup("daemon", "worker-a", {name: ">"}, count=2)
    await client.xreadgroup("daemon", "worker-b", {name: ">"}, count=2)
    await client.xreadgroup("daemon", "worker-a", {name: "0"})  # delivered twice now
    await client.xack(name, "daemon", ids[2])
    await client.execute_command("XGROUP", "CREATECONSUMER", name, "daemon", "idle-one")
    before = await _pending(client, name, "daemon")
    assert len(before) == 3

    async def drop_third(fields: Fields) -> Fields | None:
        return None if fields[b"content"] == b"message 3" else fields

    scratch = (keys.erase_scratch("s1"), keys.erase_scratch("s2"))
    changed = await rebuild_stream(client, name, scratch, drop_third, watch=True)

    assert changed == 1
    remaining = [e[0] for e in await client.xrange(name)]
    assert remaining == [i for i in ids if i != ids[3]]
    after = await _pending(client, name, "daemon")
    assert after == [p for p in before if p[0] != ids[3].decode()]
    consumers = {c["name"].decode() for c in await client.xinfo_consumers(name, "daemon")}
    assert {"worker-a", "worker-b", "idle-one"} <= consumers
    groups = {g["name"].decode(): g for g in await client.xinfo_groups(name)}
    assert set(groups) == {"daemon", "audit"}
    assert groups["audit"]["last-delivered-id"] == ids[-1]
    # the group reads on from where it was: only new entries are new
    new = await client.xadd(name, {"content": "after"})
    read = await client.xreadgroup("daemon", "worker-a", {name: ">"})
    assert [e[0] for e in read[0][1]] == [ids[4], ids[5], new]
    assert not await client.exists(*scratch)
