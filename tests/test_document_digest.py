"""A whole document's digest taken from the text written, and never a different one.

journal.lua digests a document set whole from the text it was given when the writer says
JSON.GET will return that text unchanged (``redisjson_exact``), instead of reading it back.
Where RedisJSON writes a value differently (an exponent, a float it parses an ulp away, an
integer past 64 bits, spaced separators) the digest must still be the read one: otherwise
``journal verify`` would name an honest write as an out-of-band edit.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from aether.checkpoints.chain import JournalChain
from aether.config import Settings
from aether.keys import Keyspace
from aether.store.client import connect
from aether.store.functions import Functions
from aether.store.json_text import document_text, redisjson_exact
from aether.store.state import Mutation, Store

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=1e9, max_value=2e9),  # timestamps with microseconds: 16-17 digits
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20),
    st.sampled_from(['1e-05 ", "x": 1', "9007199254740993.5", '\\": ', "0.1, 0.2"]),
)
documents = st.dictionaries(
    st.text(max_size=6),
    st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
        max_leaves=12,
    ),
    max_size=6,
)


async def _kept_and_read(client: Redis, keys: Keyspace, key: str) -> tuple[str, str]:
    kept = await client.hget(keys.journal_digests(), key)
    read = (await Functions(client, keys).digests([key]))[0]
    return (kept or b"").decode(), read


async def _write_each(settings_: Settings, docs: list[dict[str, Any]]) -> None:
    """Each document written whole; where its text is vouched for, JSON.GET returns it."""
    keys = Keyspace(settings_.namespace)
    client = await connect(settings_)
    try:
        store = Store(client, keys, actor="test")
        for i, doc in enumerate(docs):
            key = keys.daily_entry(f"d{i % 3}")
            await store.apply(Mutation().json_set(key, doc), "memory.log")
            kept, read = await _kept_and_read(client, keys, key)
            held = (await client.execute_command("JSON.GET", key)).decode()
            assert kept == read, (document_text(doc), held)
            if redisjson_exact(doc):
                assert held == document_text(doc)
        report = await JournalChain(client, keys).verify()
        assert report.ok, report.breaks
    finally:
        await client.aclose()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(docs=st.lists(documents, min_size=1, max_size=12))
def test_a_document_kept_digest_is_the_digest_of_what_redis_holds(
    settings: Settings, docs: list[dict[str, Any]]
) -> None:
    asyncio.run(_write_each(settings, docs))


async def _json_gets(client: Redis) -> int:
    stats = await client.info("commandstats")
    return int(stats.get("cmdstat_json.get", {}).get("calls", 0))


async def test_a_document_written_as_redisjson_writes_it_is_not_read_back(
    store: Store, client: Redis, keys: Keyspace
) -> None:
    plain = {"content": "the deploy passed", "score": 0.5, "timestamp": 1_764_470_000.25}
    exact = {"at": 1_764_470_000.123456}  # 16 digits, parsed exactly by RedisJSON
    floated = {"x": 1e-05}  # RedisJSON writes 0.00001
    inexact = {"x": 9469028097.760527}  # RedisJSON parses it an ulp away
    for doc, read_back in ((plain, False), (exact, False), (floated, True), (inexact, True)):
        key = keys.daily_entry("e")
        before = await _json_gets(client)
        await store.apply(Mutation().json_set(key, doc), "memory.log")
        assert (await _json_gets(client) > before) is read_back, doc
        kept, read = await _kept_and_read(client, keys, key)
        assert kept == read
    # text spaced as Python's default json writes it is read back, and still verifies
    spaced = json.dumps({"a": 1, "b": [1, 2]})
    before = await _json_gets(client)
    await store.apply(Mutation().add("JSON.SET", keys.daily_entry("s"), "$", spaced), "t")
    assert await _json_gets(client) > before
    assert (await JournalChain(client, keys).verify()).ok


def test_the_writer_sends_compact_utf8_and_vouches_only_for_what_redisjson_keeps() -> None:
    assert document_text({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'
    kept = [0.5, -0.0, 1e-4, 9.999e15, 1_764_470_000.123456, 2**64 - 1, -(2**63), "1e-05"]
    for value in kept:
        assert redisjson_exact({"v": [value]}), value
    changed = [1e-5, 1e16, 9469028097.760527, 2**64, -(2**63) - 1, float("nan"), b"x"]
    for value in changed:
        assert not redisjson_exact({"v": {"w": value}}), value
    assert not redisjson_exact({1: "one"})  # json.dumps names it "1": a clash is possible


async def test_a_client_of_the_older_call_and_a_bad_claim_still_get_a_true_digest(
    client: Redis, keys: Keyspace
) -> None:
    """Library 25's clients send five arguments; a claim for an op that is not a whole
    document, out of range or not a number is ignored, never trusted."""
    spaced = json.dumps({"a": 1e-05})  # RedisJSON keeps neither the spaces nor the exponent
    ops = [
        [b"JSON.SET", keys.daily_entry("old").encode(), b"$", spaced.encode()],
        [b"RPUSH", keys.daily_entry("list").encode(), b"x"],
    ]
    journal = [keys.journal(), keys.write_hold(), keys.archive_cursor()]
    touched = [keys.daily_entry("old"), keys.daily_entry("list")]
    for extra in ((), ("",), ("2,7,x,-1",)):
        await client.delete(*touched)
        await client.fcall(
            "aether_apply",
            len(journal) + len(touched),
            *journal,
            *touched,
            keys.prefix,
            "test",
            "older client",
            msgpack.packb(ops, use_bin_type=False),
            "",
            *extra,
        )
        kept, read = await _kept_and_read(client, keys, keys.daily_entry("old"))
        assert kept == read != ""
    assert (await JournalChain(client, keys).verify()).ok
