"""A fork: a new namespace whose state is a checkpoint's, with its own journal.

The source is only read. Each state key is copied under the new namespace's name: the
keys unchanged since the checkpoint as they are (``DUMP``/``RESTORE``), the others as they
were then (their values rebuilt from the journal's inverses, as ``checkpoint diff`` does).
The fork's journal starts empty, its hash chain continuing from the checkpoint's head, and
both sides record the fork: the fork its source (``journal:anchor`` ``forked_from``), the
source its forks (``forks``). A write to the source while it is copied moves its head: the
copy starts again, so a fork never mixes two states.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

from redis.asyncio import Redis

from aether.checkpoints.chain import JournalChain
from aether.checkpoints.diff import values_at_checkpoint
from aether.checkpoints.manager import Checkpoints
from aether.checkpoints.model import Checkpoint
from aether.codec import text
from aether.errors import ConcurrentAdminError, ConflictError, InvalidOperationError
from aether.keys import Keyspace
from aether.store.values import encode_value, read_values

__all__ = ["ForkReport", "copy_state", "fork_namespace", "forks_of"]

BATCH = 500
ATTEMPTS = 5
"""Copies tried while writes keep changing the source."""


@dataclass(frozen=True)
class ForkReport:
    """What a fork made.

    Attributes:
        source: the namespace forked.
        checkpoint: the checkpoint whose state the fork holds.
        namespace: the fork.
        keys: state keys copied.
        chain: the checkpoint's chain head, where the fork's chain starts.
        seconds: how long the copy took.
        at: when (epoch seconds).
    """

    source: str
    checkpoint: str
    namespace: str
    keys: int
    chain: str
    seconds: float
    at: float

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return asdict(self)


async def fork_namespace(
    client: Redis, checkpoints: Checkpoints, checkpoint_id: str, target: Keyspace
) -> tuple[ForkReport, list[str]]:
    """Copy the state at a checkpoint into ``target``, an empty namespace.

    Returns:
        The report and the fork's state keys.

    Raises:
        NotFoundError / AmbiguousIdError: the checkpoint id.
        InvalidOperationError: the target is the source.
        ConflictError: the target namespace holds keys.
        ConcurrentAdminError: the source kept changing through every attempt.
    """
    source = checkpoints.keys
    if target.ns == source.ns:
        raise InvalidOperationError("a fork needs a namespace of its own, not the source's")
    checkpoint = await checkpoints.resolve(checkpoint_id)
    occupied = [k async for k in client.scan_iter(match=target.every_key, count=1000)]
    if occupied:
        raise ConflictError(
            f"namespace {target.ns!r} is not empty ({len(occupied)} keys, e.g. "
            f"{text(occupied[0])!r}); a fork is made only into an empty namespace"
        )
    started = time.monotonic()
    copied = await copy_state(client, checkpoints, checkpoint, target)
    report = ForkReport(
        source.ns,
        checkpoint.id,
        target.ns,
        len(copied),
        checkpoint.chain,
        round(time.monotonic() - started, 3),
        time.time(),
    )
    fork_chain = JournalChain(client, target)
    await fork_chain.rebase(copied, checkpoint.journal_pos, checkpoint.chain or None)
    record = json.dumps(report.to_dict())
    await client.hset(target.journal_anchor(), "forked_from", record)
    await client.hset(source.forks(), target.ns, record)
    return report, copied


async def copy_state(
    client: Redis, checkpoints: Checkpoints, checkpoint: Checkpoint, target: Keyspace
) -> list[str]:
    """Every state key of the source as at ``checkpoint``, written under ``target``; its keys.

    A write to the source meanwhile moves its chain's head: the copy is dropped and made
    again.

    Raises:
        ConcurrentAdminError: the source kept changing through every attempt.
    """
    chain = JournalChain(client, checkpoints.keys)
    for _attempt in range(ATTEMPTS):
        head = await chain.head()
        copied = await _copy(client, checkpoints, checkpoint, target)
        if await chain.head() == head:
            return copied
        await _drop(client, target)
    raise ConcurrentAdminError(
        f"namespace {checkpoints.keys.ns!r} kept changing while it was copied; try again"
    )


async def _copy(
    client: Redis, checkpoints: Checkpoints, checkpoint: Checkpoint, target: Keyspace
) -> list[str]:
    """Every state key of the source as at the checkpoint, written under ``target``."""
    source = checkpoints.keys
    since = await checkpoints.undo_since(checkpoint)
    live = [
        text(raw)
        async for raw in client.scan_iter(match=source.every_key, count=1000)
        if source.is_state(text(raw)) and text(raw) not in since.undo
    ]
    copied: list[str] = []
    for i in range(0, len(live), BATCH):
        batch = live[i : i + BATCH]
        pipe = client.pipeline(transaction=False)
        for key in batch:
            pipe.dump(key)
        dumps = await pipe.execute()
        copied += await _restore(client, source, target, zip(batch, dumps, strict=True))
    changed = sorted(since.undo)
    for i in range(0, len(changed), BATCH):
        batch = changed[i : i + BATCH]
        nows = await read_values(client, batch)
        thens = await values_at_checkpoint(client, source, nows, [since.undo[key] for key in batch])
        payloads = [
            (key, await encode_value(client, source, then))
            for key, then in zip(batch, thens, strict=True)
            if then.type != "none"
        ]
        copied += await _restore(client, source, target, payloads)
    return copied


async def _restore(client: Redis, source: Keyspace, target: Keyspace, payloads: Any) -> list[str]:
    pipe = client.pipeline(transaction=False)
    written = []
    for key, payload in payloads:
        if payload is None:
            continue  # gone since the scan: a write the head check catches
        renamed = target.prefix + key[len(source.prefix) :]
        pipe.restore(renamed, 0, payload, replace=True)
        written.append(renamed)
    await pipe.execute()
    return written


async def _drop(client: Redis, target: Keyspace) -> None:
    keys = [k async for k in client.scan_iter(match=target.every_key, count=1000)]
    for i in range(0, len(keys), BATCH):
        await client.unlink(*keys[i : i + BATCH])


async def forks_of(client: Redis, keys: Keyspace) -> dict[str, Any]:
    """A namespace's forks and, if it is one, its source: ``{"source", "forks"}``."""
    source = await client.hget(keys.journal_anchor(), "forked_from")
    forks = await client.hgetall(keys.forks())
    return {
        "source": json.loads(text(source)) if source is not None else None,
        "forks": sorted(
            (json.loads(text(v)) for v in forks.values()), key=lambda f: f["at"], reverse=True
        ),
    }
