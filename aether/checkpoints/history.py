"""The state as it was at a past time, read from the journal without touching the live state.

:func:`state_at` rebuilds, into a scratch namespace of its own, every state key as the
journal says it was after its last entry at or before a time: the keys unchanged since as
they are, the others from the journal's inverses (the fork's copy, at a journal position
instead of a checkpoint). Any read then runs over that namespace exactly as over the live
one, so an "as of" answer is what a rollback to that moment would show; the scratch
namespace is dropped when the read is done (:func:`drop_namespace`).
"""

from __future__ import annotations

import contextlib
import secrets
from datetime import UTC, datetime
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from aether.checkpoints.chain import GENESIS
from aether.checkpoints.fork import copy_state
from aether.checkpoints.manager import Checkpoints
from aether.checkpoints.model import Checkpoint
from aether.codec import byte_map, command, text
from aether.errors import CheckpointError
from aether.keys import Keyspace
from aether.store.journal import compare_ids

__all__ = ["drop_namespace", "past_namespace", "position_at", "state_at"]

PAST = "asof"
"""What a scratch namespace's name says it is: ``<namespace>.asof.<token>``."""


def past_namespace(keys: Keyspace) -> Keyspace:
    """A fresh scratch namespace for one read of the past."""
    return Keyspace(f"{keys.ns}.{PAST}.{secrets.token_hex(4)}")


async def position_at(client: Redis, keys: Keyspace, when: float) -> str:
    """The journal position of the state at ``when`` (epoch seconds): its last entry then.

    Raises:
        CheckpointError: the journal no longer reaches back to ``when`` (trimmed), or
            ``when`` is in the future.
    """
    now = datetime.now(UTC).timestamp()
    if when > now + 1:
        raise CheckpointError(f"{_shown(when)} is in the future; the past only is recorded")
    ms = int(when * 1000)
    last: Any = await client.xrevrange(keys.journal(), max=f"{ms}-18446744073709551615", count=1)
    first: Any = await client.xrange(keys.journal(), count=1)
    trimmed = bool(first) and byte_map(first[0][1]).get(b"p", GENESIS.encode()) != GENESIS.encode()
    if trimmed and (not last or compare_ids(text(last[0][0]), text(first[0][0])) < 0):
        raise CheckpointError(
            f"the journal starts at {_shown(int(text(first[0][0]).split('-')[0]) / 1000)} "
            f"(older history was trimmed with its checkpoints); {_shown(when)} is before it"
        )
    return text(last[0][0]) if last else "0-0"


async def state_at(
    client: Redis, checkpoints: Checkpoints, when: float, target: Keyspace
) -> list[str]:
    """Rebuild the state at ``when`` into ``target`` (an unused namespace); its keys."""
    position = await position_at(client, checkpoints.keys, when)
    moment = Checkpoint("as-of", int(when * 1000), "", "as-of", "", position)
    return await copy_state(client, checkpoints, moment, target)


async def drop_namespace(client: Redis, keys: Keyspace) -> None:
    """Delete a scratch namespace: its keys and its search indexes."""
    listed = {text(name) for name in await command(client, "FT._LIST")}
    scoped = sorted(n for n in listed if n.startswith(keys.scoped_index_prefix()))
    for index in (keys.memory_index(), keys.vector_index(), *scoped):
        with contextlib.suppress(ResponseError):  # never made (nothing to index), or gone
            await command(client, "FT.DROPINDEX", index)
    names = [k async for k in client.scan_iter(match=keys.every_key, count=1000)]
    for i in range(0, len(names), 500):
        await client.unlink(*names[i : i + 500])


def _shown(when: float) -> str:
    return datetime.fromtimestamp(when, tz=UTC).isoformat(timespec="seconds")
