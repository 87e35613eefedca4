"""Commands packed by hiredis: the same bytes as redis-py's own packer, on every client."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio import Redis
from redis.asyncio.connection import Connection, UnixDomainSocketConnection
from redis.exceptions import DataError

from aether.store.packing import HiredisPacking, pack_with_hiredis

ARGUMENT = st.one_of(
    st.text(),
    st.binary(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
)


def _packers() -> tuple[Connection, Connection]:
    pool = pack_with_hiredis(Redis().connection_pool)
    return Connection(), pool.make_connection()  # type: ignore[return-value]


@given(st.sampled_from(["SET", "JSON.MGET", "CONFIG GET"]), st.lists(ARGUMENT, max_size=30))
def test_the_bytes_on_the_wire_are_redis_pys_own(name: str, args: list[Any]) -> None:
    python, packed = _packers()
    assert isinstance(packed, HiredisPacking)
    assert b"".join(packed.pack_command(name, *args)) == b"".join(python.pack_command(name, *args))


def test_a_value_redis_cannot_take_is_refused_as_redis_py_refuses_it() -> None:
    python, packed = _packers()
    for bad in (True, None, [1], {"a": 1}):
        with pytest.raises(DataError):
            python.pack_command("SET", "key", bad)
        with pytest.raises(DataError):
            packed.pack_command("SET", "key", bad)
    view = memoryview(b"\x00\xffvalue")
    expected = python.pack_command("SET", "k", b"\x00\xffvalue")
    assert b"".join(packed.pack_command("SET", "k", view)) == b"".join(expected)


def test_each_connection_class_is_wrapped_once() -> None:
    first = pack_with_hiredis(Redis(unix_socket_path="/nowhere").connection_pool)
    second = pack_with_hiredis(Redis(unix_socket_path="/elsewhere").connection_pool)
    assert first.connection_class is second.connection_class
    assert issubclass(first.connection_class, UnixDomainSocketConnection)
    assert pack_with_hiredis(first).connection_class is first.connection_class


async def test_the_client_every_entry_point_gets_packs_with_hiredis(client: Redis) -> None:
    assert issubclass(client.connection_pool.connection_class, HiredisPacking)
    value = "naïve ☃ 🚀 " * 1000
    await client.set("packing:text", value)
    await client.set("packing:bytes", bytes(range(256)))
    await client.set("packing:float", 0.1 + 0.2)
    assert (await client.get("packing:text")).decode() == value
    assert await client.get("packing:bytes") == bytes(range(256))
    assert float(await client.get("packing:float")) == 0.1 + 0.2
    assert await client.execute_command("CONFIG GET", "maxmemory-policy")
    await client.delete("packing:text", "packing:bytes", "packing:float")
