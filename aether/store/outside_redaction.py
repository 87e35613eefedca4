"""Erasure outside the journaled state: queues, ledger, caches, checkpoint labels.

These keys are never rolled back, so they are simply changed in place: a stream is
rebuilt without the entries that hold the text (:mod:`aether.store.streams`), a cache
entry, scratchpad or approval that holds it (or is named by it) is deleted, a checkpoint
label becomes ``[erased]``, a heartbeat or maintenance field goes, a queue element goes.
"""

from __future__ import annotations

import json

from redis.asyncio import Redis

from aether.codec import text
from aether.keys import Keyspace
from aether.store.entry_redaction import fields_hold
from aether.store.redaction import ERASED_LABEL, Redactor, scrub_json
from aether.store.streams import Fields, rebuild_stream
from aether.store.values import Value, read_value

__all__ = ["redact_outside_state"]


async def redact_outside_state(
    client: Redis, keys: Keyspace, redactor: Redactor, names: list[str]
) -> dict[str, int]:
    """Redact the non-state keys among ``names``; counts of what went, by kind."""
    counts = {"stream_entries": 0, "other_keys": 0, "checkpoint_labels": 0}
    untouched = keys.erasure_untouched()
    for name in names:
        if keys.is_state(name) or name.startswith(untouched):
            continue
        for kind, n in (await _redact_one(client, keys, redactor, name)).items():
            counts[kind] += n
    return counts


async def _redact_one(
    client: Redis, keys: Keyspace, redactor: Redactor, name: str
) -> dict[str, int]:
    if redactor.names_it(name):  # a scratchpad or tool cache named after the subject
        return {"other_keys": await client.delete(name)}
    if text(await client.type(name)) == "stream":

        async def drop(fields: Fields) -> Fields | None:
            return None if fields_hold(redactor, fields) else fields

        scratch = (keys.erase_scratch("stream"), keys.erase_scratch("old"))
        return {"stream_entries": await rebuild_stream(client, name, scratch, drop, watch=True)}
    value = await read_value(client, name)
    holds = redactor.holds
    if name.startswith(keys.checkpoint("")):
        labels = {f: ERASED_LABEL for f, v in value.content.items() if holds(v)}
        if labels:
            await client.hset(name, mapping=labels)
        return {"checkpoint_labels": len(labels)}
    if name == keys.rollbacks() and redactor.needle is not None:
        n = 0
        for i, raw in enumerate(value.content):
            if holds(raw):
                await client.lset(name, i, json.dumps(scrub_json(json.loads(raw), redactor.needle)))
                n += 1
        return {"other_keys": n}
    if value.type == "hash" and name in keys.field_hashes():
        fields = [f for f, v in value.content.items() if holds(f) or holds(v)]
        if fields:
            await client.hdel(name, *fields)
        return {"other_keys": len(fields)}
    if value.type in ("string", "json", "hash"):
        if _whole_goes(redactor, value):
            await client.delete(name)
            return {"other_keys": 1}
        return {}
    if value.type == "list":
        kept = [v for v in value.content if not holds(v)]
        if len(kept) == len(value.content):
            return {}
        pipe = client.pipeline(transaction=True)
        pipe.delete(name)
        if kept:
            pipe.rpush(name, *kept)
        await pipe.execute()
        return {"other_keys": len(value.content) - len(kept)}
    doomed = [m for m in value.content if redactor.member_gone(m, name)]
    if doomed:
        if value.type == "zset":
            await client.zrem(name, *doomed)
        else:
            await client.srem(name, *doomed)
    return {"other_keys": len(doomed)}


def _whole_goes(redactor: Redactor, value: Value) -> bool:
    """A cache entry, scratchpad or approval holding the text (or an erased item's text)."""
    return redactor.value_holds(value) or (
        value.type == "hash" and any(redactor.is_erased_text(v) for v in value.content.values())
    )
