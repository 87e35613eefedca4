"""The typed Functions layer agrees with the Lua library it calls.

The op families the library accepts (``journal.lua``) and those the Python side builds
(``aether.store.state``) are the same sets; every registered function has its method and
its read-only flag; every error reply the library can raise maps to one of aether's
errors; and nothing outside ``aether/store/functions.py`` calls a function by name.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from aether.errors import (
    ArchiveError,
    CheckpointError,
    ConcurrentAdminError,
    ConflictError,
    InvalidOperationError,
)
from aether.keys import Keyspace
from aether.store import state
from aether.store.client import LIBRARIES as LOADED
from aether.store.functions import FUNCTIONS, REFUSALS, Functions, loaded_version, refusal
from aether.store.state import Mutation, Store

PACKAGE = Path(__file__).resolve().parents[1] / "aether"
LUA = (PACKAGE / "store" / "journal.lua").read_text()
LIBRARIES = {name: (PACKAGE / "store" / name).read_text() for name, _ in LOADED}


def _lua_set(name: str) -> set[str]:
    """The names set ``= true`` in one ``local NAME = { ... }`` table of journal.lua."""
    body = re.search(rf"^local {name} = \{{(.*?)\}}\n", LUA, re.S | re.M)
    assert body is not None, name
    pairs = re.findall(r"(?:\['([A-Z.]+)'\]|\b([A-Z]+))\s*=\s*true", body.group(1))
    return {quoted or bare for quoted, bare in pairs}


def test_the_op_tables_of_lua_and_python_agree() -> None:
    assert _lua_set("STRUCTURAL") == set(state.STRUCTURAL_COMMANDS)
    assert _lua_set("IMAGE") == set(state.IMAGE_COMMANDS)
    assert _lua_set("GUARD") == set(state.GUARD_COMMANDS)


def test_every_registered_function_has_a_typed_method() -> None:
    registered: dict[str, bool] = {}
    for source in LIBRARIES.values():
        for name in re.findall(r"redis\.register_function\('(\w+)'", source):
            registered[name] = False
        for name, flags in re.findall(
            r"redis\.register_function\{function_name = '(\w+)'.*?flags = \{([^}]*)\}",
            source,
            re.S,
        ):
            registered[name] = "no-writes" in flags
    assert registered == FUNCTIONS
    methods = {n for n in dir(Functions) if not n.startswith("_")}
    versions = {version for _, version in LOADED}
    for name in FUNCTIONS:
        short = name.removeprefix("aether_")
        assert name in versions or short in methods or f"{short}_page" in methods, name


def test_each_library_holds_one_concern_and_names_its_version() -> None:
    """The journal's library holds only the journal: a retrieval change leaves its version."""
    journal = set(re.findall(r"function_name = '(\w+)'|register_function\('(\w+)'", LUA))
    names = {a or b for a, b in journal}
    assert names == {
        "aether_version",
        "aether_apply",
        "aether_checkpoint",
        "aether_rollback_begin",
        "aether_rollback_step",
        "aether_replay",
        "aether_snapshot",
        "aether_digests",
    }
    for name, version in LOADED:
        source = LIBRARIES[name]
        assert source.startswith("#!lua name="), name
        assert f"'{version}'" in source and "local VERSION = '" in source, name


def test_nothing_else_calls_a_function_by_name() -> None:
    callers = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if re.search(r"\.fcall(_ro)?\(", path.read_text())
    ]
    assert callers == ["store/functions.py"]


def test_every_error_reply_of_the_library_maps_to_an_aether_error() -> None:
    replies = set(re.findall(r"error_reply\('(?:ERR |WRONGTYPE )?(aether: [^']*)'", LUA))
    replies |= set(re.findall(r"return '(?:ERR |WRONGTYPE )?(aether: [^']*)'", LUA))
    assert replies, "the library's error replies were not found"
    for reply in replies:
        assert refusal(ResponseError(reply)) is not None, reply
    assert refusal(ResponseError("aether: exists aether:x")) is ConflictError
    assert refusal(ResponseError("aether: admin lock not held")) is ConcurrentAdminError
    assert refusal(ResponseError("WRONGTYPE aether: HSET on k, which holds a list")) is (
        InvalidOperationError
    )
    assert refusal(ResponseError("aether: entry 1-1 has unreadable ops")) is ArchiveError
    assert refusal(ResponseError("aether: no rollback in progress")) is CheckpointError
    assert refusal(ResponseError("WRONGTYPE Operation against a key")) is None
    assert [prefix for prefix, _ in REFUSALS][-1] == "aether: "  # the catch-all is last


async def test_the_methods_reach_the_loaded_library(client: Redis, keys: Keyspace) -> None:
    assert await loaded_version(client) == re.search(r"VERSION = '(\d+)'", LUA).group(1)  # type: ignore[union-attr]
    store = Store(client, keys, actor="test")
    first = await store.apply(Mutation().set(keys.system_flags() + ":x", "1"), "test.one")
    guarded = Mutation().absent(keys.system_flags() + ":x").set(keys.system_flags() + ":y", "2")
    with pytest.raises(ConflictError, match="exists"):
        await store.apply(guarded, "test.guard")
    functions = Functions(client, keys)
    assert await functions.get_fields([keys.longterm("none")], ["$.content"]) == [None]
    assert await functions.unlock(keys.daemon_presence(), "not the token") == 0
    entries = await client.xrange(keys.journal())
    assert [e[0].decode() for e in entries] == [first]
