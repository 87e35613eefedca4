"""Chaos soak: the daemon and Redis killed at random while an agent is used; prints JSON.

A writer logs memories and a sender sends inbox messages without pause while the soak,
``--cycles`` times, waits a random moment and SIGKILLs either the embedded redis-server
or the daemon (``aether up``, a subprocess), then starts it again. Everything is
loopback: a temporary home, its own embedded Redis, a scripted OpenAI-compatible server
on 127.0.0.1 for the daemon's LLM.

Reported:

- ``acked_writes``: memory writes whose call returned; ``lost_writes``: those missing
  afterwards (with ``appendfsync always`` it must be 0). ``unacked_writes``: calls that
  failed during an outage (not promised, not counted as lost).
- ``inbox_sent`` (accepted by Redis), ``answered_once``, ``answered_twice`` (must be 0),
  ``unanswered`` (must be 0 once the soak has settled).
- ``rollback_undo_identical``: after the soak, a rollback to a checkpoint taken mid-soak
  followed by undo leaves every state key byte-identical (DUMP images, as the property
  tests compare).
- With ``--fsync everysec``: ``loss_window_ms``, the longest time between a lost write's
  acknowledgement and the Redis kill that lost it (Redis documents up to about a second).

Usage: python bench/chaos.py [--cycles 20] [--fsync always|everysec] [--seed N]
       [--max-seconds 900]

Exit status 1 when an invariant fails (lost writes under ``always``, a message answered
twice or never, or rollback + undo not byte-identical).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.codec import text
from aether.config import Settings
from aether.errors import REDIS_OUTAGE, AetherError
from aether.keys import Keyspace
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.daily import DailyLog
from aether.runtime.inbox import Inbox
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.testing.image import state_image

# the scripted LLM server is the test suite's; the bench runs from a checkout
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from aether.testing.model import ScriptedOpenAI, completion

NAMESPACE = "chaos"
WRITE_GAP_S = 0.01
SEND_GAP_S = 0.25
SETTLE_S = 180.0


@dataclass
class Tally:
    """What the writer and the sender did, and when Redis was killed."""

    acked: dict[str, float] = field(default_factory=dict)  # entry id -> ack time
    unacked: int = 0
    sent: list[str] = field(default_factory=list)
    unsent: int = 0
    redis_kills: list[float] = field(default_factory=list)
    daemon_kills: int = 0
    daemon_starts: int = 0


def _daemon_env(home: Path, llm: ScriptedOpenAI, fsync: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AETHER_")}
    env.update(
        {
            "AETHER_HOME": str(home),
            "AETHER_NAMESPACE": NAMESPACE,
            "AETHER_EMBEDDING__PROVIDER": "none",
            "AETHER_CONFIG_FILE": str(home / "none.toml"),
            "AETHER_REDIS_APPENDFSYNC": fsync,
            "AETHER_DAEMON__HEARTBEAT_INTERVAL_S": "3600",
            "AETHER_DAEMON__MAINTENANCE_INTERVAL_S": "3600",
            "AETHER_LLM__BASE_URL": llm.base_url,
            "AETHER_LLM__MODEL": "scripted",
            "AETHER_LLM__MAX_RETRIES": "0",
        }
    )
    return env


class Daemon:
    """``aether up`` as a subprocess that the soak kills and starts again."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env, self.log = env, log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "aether", "up"],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        return self.proc.returncode


async def _retry(what: Any, deadline: float) -> Any:
    """Run ``what()`` until it succeeds through outages, or raise at ``deadline``."""
    while True:
        try:
            return await what()
        except REDIS_OUTAGE:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _write(daily: DailyLog, tally: Tally, stop: asyncio.Event) -> None:
    n = 0
    while not stop.is_set():
        n += 1
        try:
            doc = await daily.log(f"chaos write {n}", source="agent")
        except REDIS_OUTAGE:
            tally.unacked += 1
            await asyncio.sleep(0.1)
            continue
        tally.acked[str(doc["id"])] = time.monotonic()
        await asyncio.sleep(WRITE_GAP_S)


async def _send(inbox: Inbox, tally: Tally, stop: asyncio.Event) -> None:
    n = 0
    while not stop.is_set():
        n += 1
        try:
            tally.sent.append(await inbox.send(f"chaos message {n}", sender="chaos"))
        except REDIS_OUTAGE:
            tally.unsent += 1
            await asyncio.sleep(0.1)
            continue
        await asyncio.sleep(SEND_GAP_S)


async def _replies(client: Redis, keys: Keyspace) -> Counter[str]:
    counts: Counter[str] = Counter()
    for _, fields in await client.xrange(keys.outbox()):
        counts[text(fields.get(b"in_reply_to", b""))] += 1
    return counts


async def _settle(client: Redis, keys: Keyspace, sent: list[str], deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            counts = await _replies(client, keys)
        except REDIS_OUTAGE:
            counts = Counter()
        if all(counts[m] for m in sent):
            return
        await asyncio.sleep(0.5)


async def _missing(client: Redis, keys: Keyspace, ids: list[str]) -> list[str]:
    missing: list[str] = []
    for start in range(0, len(ids), 1000):
        chunk = ids[start : start + 1000]
        pipe = client.pipeline(transaction=False)
        for entry_id in chunk:
            pipe.exists(keys.daily_entry(entry_id))
        found = await pipe.execute()
        missing += [e for e, there in zip(chunk, found, strict=True) if not there]
    return missing


def _loss_window_ms(tally: Tally, lost: list[str]) -> float:
    """Longest gap between a lost write's acknowledgement and the kill that lost it."""
    window = 0.0
    for entry_id in lost:
        acked = tally.acked[entry_id]
        kills = [k for k in tally.redis_kills if k >= acked]
        if kills:
            window = max(window, (kills[0] - acked) * 1000)
    return round(window, 1)


async def soak(cycles: int, fsync: str, seed: int, max_seconds: float) -> dict[str, Any]:
    """Run the soak in a fresh temporary home; returns the report."""
    rng = random.Random(seed)
    home = Path(tempfile.mkdtemp(prefix="aether-chaos-"))
    settings = Settings(
        home=home, namespace=NAMESPACE, redis_appendfsync=fsync, embedding={"provider": "none"}
    )
    keys = Keyspace(NAMESPACE)
    server = EmbeddedRedis(settings)
    server.start()
    began = time.monotonic()
    deadline = began + max_seconds
    tally = Tally()
    with ScriptedOpenAI(responder=lambda body: completion("noted")) as llm:
        daemon = Daemon(_daemon_env(home, llm, fsync), home / "daemon.log")
        daemon.start()
        tally.daemon_starts += 1
        client = await connect(settings, start=False)
        layer = MemoryLayer.open(settings, client, actor="chaos-writer")
        inbox = Inbox(client, keys)
        checkpoints = Checkpoints.from_settings(client, keys, settings)
        stop = asyncio.Event()
        writer = asyncio.create_task(_write(DailyLog(layer), tally, stop))
        sender = asyncio.create_task(_send(inbox, tally, stop))
        checkpoint_id: str | None = None
        done = 0
        try:
            for cycle in range(cycles):
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(rng.uniform(0.5, 2.0))
                if rng.random() < 0.5:
                    pid = server.status().pid
                    if pid is not None:
                        os.kill(pid, signal.SIGKILL)
                        tally.redis_kills.append(time.monotonic())
                    await asyncio.sleep(rng.uniform(0.1, 1.5))
                    await asyncio.to_thread(server.start)
                else:
                    await asyncio.to_thread(daemon.kill)
                    tally.daemon_kills += 1
                    await asyncio.sleep(rng.uniform(0.0, 0.5))
                    daemon.start()
                    tally.daemon_starts += 1
                if cycle == cycles // 2:
                    checkpoint = await _retry(
                        lambda: checkpoints.create(label="mid-soak"), deadline
                    )
                    checkpoint_id = checkpoint.id
                done += 1
        finally:
            stop.set()
            await asyncio.gather(writer, sender)
        await _settle(client, keys, tally.sent, time.monotonic() + SETTLE_S)
        exit_code = daemon.stop()
        replies = await _replies(client, keys)
        lost = await _missing(client, keys, list(tally.acked))
        identical: bool | None = None
        rollback_ops = 0
        if checkpoint_id is not None:
            try:
                before = await state_image(client, keys)
                result = await checkpoints.rollback_to(checkpoint_id, actor="chaos")
                rollback_ops = result.ops_applied
                await checkpoints.undo(actor="chaos")
                identical = await state_image(client, keys) == before
            except AetherError as e:  # e.g. under everysec the checkpoint itself was lost
                print(f"rollback check skipped: {e}", file=sys.stderr)
        await client.aclose()
    server.stop()
    answered = [replies[m] for m in tally.sent]
    report: dict[str, Any] = {
        "fsync": fsync,
        "cycles": done,
        "seed": seed,
        "seconds": round(time.monotonic() - began, 1),
        "redis_kills": len(tally.redis_kills),
        "daemon_kills": tally.daemon_kills,
        "acked_writes": len(tally.acked),
        "unacked_writes": tally.unacked,
        "lost_writes": len(lost),
        "inbox_sent": len(tally.sent),
        "answered_once": sum(1 for n in answered if n == 1),
        "answered_twice": sum(1 for n in answered if n > 1),
        "unanswered": sum(1 for n in answered if n == 0),
        "rollback_ops": rollback_ops,
        "rollback_undo_identical": identical,
        "daemon_exit_code": exit_code,
    }
    if fsync != "always":
        report["loss_window_ms"] = _loss_window_ms(tally, lost)
    report["ok"] = (
        (fsync != "always" or report["lost_writes"] == 0)
        and report["answered_twice"] == 0
        and report["unanswered"] == 0
        and identical is not False
        and (fsync != "always" or identical is True)
    )
    if not report["ok"]:
        report["daemon_log_tail"] = (home / "daemon.log").read_text()[-3000:]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--fsync", choices=("always", "everysec"), default="always")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-seconds", type=float, default=900.0)
    args = parser.parse_args()
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),  # stdout is the report
    )
    report = asyncio.run(soak(args.cycles, args.fsync, args.seed, args.max_seconds))
    print(json.dumps(report, indent=2))
    sys.exit(0 if report["ok"] else 1)


if __name__ == "__main__":
    main()
