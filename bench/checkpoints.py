"""Checkpoint and rollback costs on a real embedded Redis; prints one JSON object.

- checkpoint_ms: median time of a durable checkpoint (WAITAOF 1 0 under appendfsync
  always) with 1k, 10k and 100k daily-log entries in memory; should stay flat.
- rollback_changes_per_s: changes undone per second by one rollback, for several sizes.
- journal_bytes_per_change: journal memory per daily-log write (entry doc + list append),
  and per op.
- write_ms: median and p99 time of one daily-log write (a document and its day list's
  append, journaled and hash-chained) while the day's list holds 100, 1k and 10k entries.

- with ``--against LIBRARY.lua``: the same daily-log writes and rollbacks, interleaved write
  by write and run by run, on two servers, one with this package's journal library and one
  with LIBRARY.lua loaded in its place (a library with the same calls, such as the journal
  before the hash chain: ``git show e4a6bd5:aether/store/journal.lua``). Both see the same
  machine at the same moment, so their difference is the libraries', not the hour's: runs
  of the whole bench one after the other vary by ±15 % here. ``--repeat N`` does it N times
  (fresh namespaces each time) and adds the median of each change over the runs, rollbacks
  as the change in time: a single run of the same pair varies by a few percent. Each run
  also reports the server's own time per write and per rollback (``FCALL`` in
  ``INFO commandstats``), which moves far less with the machine's I/O than their latency.

- with ``--against LIBRARY.lua --instructions``: the CPU instructions Redis executes per
  daily-log write with each library, counted by valgrind's callgrind (Debian's ``valgrind``)
  over every command the server runs in the window (the script, the commands it calls, the
  AOF feed; not the fsync, which is I/O). A count is the same from run to run whatever else
  the machine does, so it tells a change of a few percent that timings here cannot.

Usage: python bench/checkpoints.py [--quick] [--against LIBRARY.lua [--repeat N | --instructions]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import date
from pathlib import Path
from typing import Any

from percentiles import percentile
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.keys import Keyspace
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.store.state import Mutation, Store


def _entry(i: int) -> dict[str, object]:
    return {
        "content": f"observation {i}: the build on branch feature-{i % 97} passed after retry",
        "source": "agent",
        "tags": ["ci", f"t{i % 13}"],
        "score": 0.5,
        "timestamp": 1_700_000_000 + i,
    }


async def _fill(store: Store, keys: Keyspace, start: int, count: int, batch: int = 250) -> None:
    day = keys.daily(date(2026, 1, 1))
    for lo in range(start, start + count, batch):
        m = Mutation()
        ids = [f"e{i}" for i in range(lo, min(lo + batch, start + count))]
        for n, eid in enumerate(ids):
            m.json_set(keys.daily_entry(eid), _entry(lo + n))
        m.rpush(day, *ids)
        await store.apply(m, "bench.fill")


async def checkpoint_ms(client: Redis, sizes: list[int]) -> dict[str, float]:
    keys = Keyspace("bench-cp")
    store, cps = Store(client, keys), Checkpoints(client, keys, keep=1000)
    out: dict[str, float] = {}
    filled = 0
    for size in sizes:
        await _fill(store, keys, filled, size - filled)
        filled = size
        times = []
        for _ in range(50):
            t = time.perf_counter()
            await cps.create(label="bench")  # the default path, retention check included
            times.append((time.perf_counter() - t) * 1000)
        out[str(size)] = round(statistics.median(times), 3)
    return out


async def _rollback_setup(client: Redis, name: str, size: int) -> str:
    """A namespace of 1,000 entries, a checkpoint, then ``size`` changes; the checkpoint's id."""
    keys = Keyspace(name)
    store, cps = Store(client, keys), Checkpoints(client, keys, keep=1000)
    await _fill(store, keys, 0, 1000)
    cp = await cps.create()
    day = keys.daily(date(2026, 1, 2))
    for i in range(size):  # one change (one journal entry, one op) each
        if i % 2:
            await store.apply(Mutation().rpush(day, f"x{i}"), "bench")
        else:
            await store.apply(Mutation().json_set(keys.longterm(f"m{i}"), _entry(i)), "bench")
    return cp.id


async def _rollback_only(client: Redis, name: str, checkpoint: str, budget_ms: int = 100) -> int:
    """Roll the namespace back to ``checkpoint``; the number of ops it applied."""
    keys = Keyspace(name)
    cps = Checkpoints(client, keys, keep=1000, budget_ms=budget_ms)
    result = await cps.rollback_to(checkpoint)
    return result.ops_applied


async def _rollback_once(
    client: Redis, name: str, size: int, server_ms: list[float] | None = None
) -> float:
    """Changes undone per second by one rollback of ``size`` changes.

    ``server_ms`` receives the rollback's time inside Redis (its ``FCALL`` steps), in ms.
    """
    checkpoint = await _rollback_setup(client, name, size)
    await client.config_resetstat()
    t = time.perf_counter()
    assert await _rollback_only(client, name, checkpoint) == size
    elapsed = time.perf_counter() - t
    if server_ms is not None:
        server_ms.append(await _fcall_stat(client, "usec") / 1000)
    return size / elapsed


async def rollback_rate(client: Redis, sizes: list[int]) -> dict[str, float]:
    return {
        str(size): round(await _rollback_once(client, f"bench-rb-{size}", size)) for size in sizes
    }


async def journal_bytes(client: Redis, writes: int = 2000) -> dict[str, float]:
    keys = Keyspace("bench-jb")
    store = Store(client, keys)
    day = keys.daily(date(2026, 1, 3))
    for i in range(writes):
        await store.apply(
            Mutation().json_set(keys.daily_entry(f"j{i}"), _entry(i)).rpush(day, f"j{i}"), "log"
        )
    usage = await client.memory_usage(keys.journal(), samples=0) or 0
    entry_doc_bytes = len(json.dumps(_entry(1)))
    return {
        "per_daily_log_write": round(usage / writes, 1),
        "per_op": round(usage / (writes * 2), 1),
        "entry_document_bytes": entry_doc_bytes,
    }


async def _write_once(store: Store, keys: Keyspace, day: str, eid: str, i: int) -> float:
    """One daily-log write (its document and its day list's append), in ms."""
    m = Mutation().json_set(keys.daily_entry(eid), _entry(i)).rpush(day, eid)
    t = time.perf_counter()
    await store.apply(m, "memory.log")
    return (time.perf_counter() - t) * 1000


async def write_ms(client: Redis, lengths: list[int], writes: int = 300) -> dict[str, Any]:
    keys = Keyspace("bench-wr")
    store = Store(client, keys)
    day = keys.daily(date(2026, 1, 4))
    out: dict[str, Any] = {}
    written = 0
    for length in lengths:
        if written < length:
            await _fill(store, keys, written, length - written)  # onto 2026-01-01's list
            await client.delete(day)
            for lo in range(0, length, 1000):  # the measured list, filled in one go
                ids = [f"f{i}" for i in range(lo, min(lo + 1000, length))]
                await store.apply(Mutation().rpush(day, *ids), "bench.fill")
            written = length
        times = [await _write_once(store, keys, day, f"w{length}-{i}", i) for i in range(writes)]
        out[str(length)] = {"p50": percentile(times, 0.5), "p99": percentile(times, 0.99)}
    return out


async def _fcall_stat(client: Redis, field: str) -> float:
    """Redis's own time in ``FCALL`` since the last ``CONFIG RESETSTAT`` (``usec``: in all,
    ``usec_per_call``: per call), in µs."""
    stats = await client.info("commandstats")
    return float(stats["cmdstat_fcall"][field])


def _change(this: float, against: float) -> float:
    return round(this / against - 1, 4)


def _pair(values: list[float]) -> dict[str, float]:
    """This side's figure, the other's, and the change between them."""
    return {"this": values[0], "against": values[1], "change": _change(values[0], values[1])}


def _spread(changes: list[float]) -> dict[str, Any]:
    """Changes over repeated runs: their median and each run's."""
    return {"median": round(statistics.median(changes), 4), "runs": changes}


async def interleaved(
    this: Redis, against: Redis, writes: int, rollbacks: list[int], runs: int, tag: str = "ab"
) -> dict[str, Any]:
    """Writes and rollbacks alternated between the two servers (``this`` first every other time).

    ``tag`` names the run's namespaces, so that repeated runs start afresh.
    """
    clients = (this, against)
    stores = []
    for client in clients:
        keys = Keyspace(f"bench-{tag}")
        store = Store(client, keys)
        day = keys.daily(date(2026, 1, 4))
        await store.apply(Mutation().rpush(day, *[f"f{i}" for i in range(1000)]), "bench.fill")
        stores.append((store, keys, day))
    times: tuple[list[float], list[float]] = ([], [])
    for client in clients:
        await client.config_resetstat()
    for i in range(writes):
        for side in (0, 1) if i % 2 else (1, 0):
            times[side].append(await _write_once(*stores[side], f"w{i}", i))
    p50 = [percentile(t, 0.5, 3) for t in times]
    server = [await _fcall_stat(client, "usec_per_call") for client in clients]
    out: dict[str, Any] = {
        "write_ms_p50": _pair(p50),
        "write_server_us": _pair(server),
        "rollback_changes_per_s": {},
        "rollback_server_ms": {},
    }
    for size in rollbacks:
        rates: tuple[list[float], list[float]] = ([], [])
        inside: tuple[list[float], list[float]] = ([], [])
        for run in range(runs):
            for side in (0, 1) if run % 2 else (1, 0):
                name = f"{tag}-{size}-{run}"
                rates[side].append(await _rollback_once(clients[side], name, size, inside[side]))
        out["rollback_changes_per_s"][str(size)] = _pair(
            [round(statistics.median(r)) for r in rates]
        )
        out["rollback_server_ms"][str(size)] = _pair(
            [round(statistics.median(r), 2) for r in inside]
        )
    return out


def _over_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each change's median over the runs and the runs' values; rollbacks as time changed."""
    out: dict[str, Any] = {
        "write_p50_change": _spread([r["write_ms_p50"]["change"] for r in runs]),
        "write_server_time_change": _spread([r["write_server_us"]["change"] for r in runs]),
        "rollback_time_change": {},
        "rollback_server_time_change": {},
    }
    for size in runs[0]["rollback_changes_per_s"]:
        rates = [r["rollback_changes_per_s"][size] for r in runs]
        times = [_change(rate["against"], rate["this"]) for rate in rates]  # time is 1 / rate
        out["rollback_time_change"][size] = _spread(times)
        inside = [r["rollback_server_ms"][size]["change"] for r in runs]
        out["rollback_server_time_change"][size] = _spread(inside)
    return out


async def against_main(library: Path, quick: bool, repeat: int = 1) -> None:
    homes = [Path(tempfile.mkdtemp(prefix="aether-bench-")) for _ in range(2)]
    settings = [Settings(home=home, redis_appendfsync="always") for home in homes]
    clients: list[Redis] = []
    try:
        for s in settings:
            clients.append(await connect(s))
        await clients[1].function_load(library.read_text(), replace=True)
        runs = [
            await interleaved(
                clients[0],
                clients[1],
                writes=1000 if quick else 5000,
                rollbacks=[1_000, 10_000] if quick else [1_000, 10_000, 50_000],
                runs=3,
                tag=f"ab{n}",
            )
            for n in range(repeat)
        ]
        result: dict[str, Any] = {
            "server": "embedded redis 8.2 + RediSearch 2.10 + RedisJSON 2.8, appendfsync always",
            "against": str(library),
            "method": "interleaved: each write and each rollback run alternates between them",
            **(runs[0] if repeat == 1 else {"repeated": repeat, **_over_runs(runs), "each": runs}),
        }
    finally:
        for client in clients:
            await client.aclose()
        for s in settings:
            EmbeddedRedis(s).stop()
    print(json.dumps(result, indent=2))


_CALLGRIND_WAIT_S = 300.0  # a server under valgrind starts (modules loaded) in tens of seconds
# A rollback step stops at a budget of CPU time, and callgrind runs Redis about 40 times
# slower: at the default 100 ms a rollback would take ~40 times the steps it takes outside,
# each digesting its lists again. 4 s under callgrind is about the default's work outside.
_CALLGRIND_STEP_BUDGET_MS = 4_000


Work = Callable[[Redis], Awaitable[Any]]


async def _instructions(library: Path | None, setup: Work, measured: Work) -> int:
    """Instructions Redis executes in ``measured`` after ``setup`` with ``library`` (or ours)."""
    home = Path(tempfile.mkdtemp(prefix="aether-bench-"))
    settings = Settings(home=home, redis_appendfsync="always")
    counts = home / "callgrind.out"  # .<pid>: valgrind's own process exits at the fork
    server = EmbeddedRedis(settings)
    launcher = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={counts}.%p",
        f"--log-file={home / 'valgrind.log'}",  # not stderr: the daemon would hold the pipe
        "--collect-atstart=no",
        "--toggle-collect=processCommand",  # commands only: not the event loop's waits
        "--zero-before=pingCommand",  # the counts start at the PING sent after the setup
    ]
    server.start(launcher=launcher, timeout=_CALLGRIND_WAIT_S)
    pid = server.status().pid  # status() PINGs: never again once the counts start
    assert pid is not None
    client = await connect(settings)
    try:
        if library is not None:
            await client.function_load(library.read_text(), replace=True)
        await setup(client)
        await client.ping()
        await measured(client)
    finally:
        await client.aclose()
        # SIGTERM, not SHUTDOWN: a command's work would be counted, the signal's is not
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + _CALLGRIND_WAIT_S
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
    return sum(
        int(line.split()[1])
        for line in Path(f"{counts}.{pid}").read_text().splitlines()
        if line.startswith("totals:")
    )


async def _write_instructions(library: Path | None, writes: int) -> float:
    """Instructions per daily-log write onto a day list of 1,000 entries."""
    keys = Keyspace("bench-ins")
    day = keys.daily(date(2026, 1, 4))

    async def setup(client: Redis) -> None:
        fill = Mutation().rpush(day, *[f"f{i}" for i in range(1000)])
        await Store(client, keys).apply(fill, "bench.fill")

    async def measured(client: Redis) -> None:
        store = Store(client, keys)
        for i in range(writes):
            await _write_once(store, keys, day, f"w{i}", i)

    return await _instructions(library, setup, measured) / writes


async def _rollback_instructions(library: Path | None, size: int) -> float:
    """Instructions per change undone by one rollback of ``size`` changes."""
    undone: list[int] = []
    checkpoint: list[str] = []

    async def setup(client: Redis) -> None:
        checkpoint.append(await _rollback_setup(client, "bench-ins-rb", size))

    async def measured(client: Redis) -> None:
        rolled = await _rollback_only(
            client, "bench-ins-rb", checkpoint[0], budget_ms=_CALLGRIND_STEP_BUDGET_MS
        )
        undone.append(rolled)

    total = await _instructions(library, setup, measured)
    assert undone == [size]
    return total / size


async def instructions_main(library: Path, quick: bool) -> None:
    if shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind (Debian package valgrind)")
    writes, size = (500, 1_000) if quick else (2_000, 10_000)
    per_write = [await _write_instructions(lib, writes) for lib in (None, library)]
    per_change = [await _rollback_instructions(lib, size) for lib in (None, library)]
    result = {
        "server": "embedded redis 8.2 + RediSearch 2.10 + RedisJSON 2.8, appendfsync always",
        "against": str(library),
        "method": "callgrind: instructions Redis executes in every command of the work",
        "writes": writes,
        "instructions_per_write": _pair([round(v) for v in per_write]),
        "rollback_changes": size,
        "rollback_instructions_per_change": _pair([round(v) for v in per_change]),
    }
    print(json.dumps(result, indent=2))


async def main(quick: bool) -> None:
    home = Path(tempfile.mkdtemp(prefix="aether-bench-"))
    settings = Settings(home=home, redis_appendfsync="always")
    client = await connect(settings)
    try:
        sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
        rb_sizes = [1_000, 5_000] if quick else [1_000, 10_000, 50_000]
        result = {
            "server": "embedded redis 8.2 + RediSearch 2.10 + RedisJSON 2.8, appendfsync always",
            "checkpoint_ms": await checkpoint_ms(client, sizes),
            "rollback_changes_per_s": await rollback_rate(client, rb_sizes),
            "journal_bytes_per_change": await journal_bytes(client),
            "write_ms": await write_ms(client, [100, 1_000, 10_000]),
        }
    finally:
        await client.aclose()
        EmbeddedRedis(settings).stop()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    import logging

    import structlog

    structlog.configure(  # warnings to stderr: stdout is the JSON
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and writes")
    parser.add_argument("--against", type=Path, help="a journal library (.lua) to compare with")
    parser.add_argument("--repeat", type=int, default=1, help="interleaved runs (--against)")
    parser.add_argument(
        "--instructions", action="store_true", help="count instructions per write (--against)"
    )
    args = parser.parse_args()
    if args.instructions and args.against is None:
        sys.exit("--instructions goes with --against")
    if args.instructions and args.repeat != 1:
        sys.exit("--instructions counts the same every time: no --repeat")
    if args.against is not None:
        if not args.against.is_file():
            sys.exit("--against needs a journal library file (.lua)")
        if args.repeat < 1:
            sys.exit("--repeat needs at least 1")
        if args.instructions:
            asyncio.run(instructions_main(args.against, args.quick))
        else:
            asyncio.run(against_main(args.against, args.quick, args.repeat))
    elif args.repeat != 1:
        sys.exit("--repeat goes with --against")
    else:
        asyncio.run(main(args.quick))
