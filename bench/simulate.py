"""The whole-product simulation: many operation sequences, then weeks of a daemon's life.

Two parts, one JSON object:

1. **Operations.** :class:`bench.whole_product.WholeProduct` (a hypothesis state machine
   over every operation against one real namespace, invariants after every step, the
   journal chain's verification among them) run for
   ``--steps`` steps, seed after seed, against the bench's own embedded Redis.
2. **Daemon life.** The real :class:`aether.runtime.daemon.Daemon` (its inbox lanes,
   supervisor, approvals, heartbeat and maintenance) over ``--days`` simulated days on an
   injected clock, with the scripted model: each day three sessions talk to it, one asks
   for a tool call that waits for the operator (the others, and a heartbeat, must be served
   meanwhile),
   the operator approves it by an id prefix, the heartbeat and maintenance run at the
   day's time, the day's notes' tag gets its own vector index (maintenance drops it every
   other day, at the real reach; a scoped index, decision 0011), the operator takes a
   checkpoint, writes, rolls back and undoes, and every
   week erases a text, and the name of a session named after a person, while the daemon
   runs. Faults, placed by the seed (``--seed``; the first week has each kind once): on
   about one day in three the daemon dies (its task cancelled without a clean stop)
   while a turn waits for the operator (the next daemon must run it again and wait on
   the request it asked before, the only one pending), in the middle of its maintenance
   (the next run must finish it, nothing lost), or at the day's end with a message in
   hand; on about one day in seven the Redis server is SIGKILLed and
   started again, likewise while a turn waits or at the day's end. After each day: every message
   answered exactly once, every acknowledged memory present and found by a search filtered
   by its tag (through the tag's own index while it stands), nothing holding writes, the
   erased texts nowhere, the journal's hash chain and the live state verified.

Prints ``{"steps", "simulated_days", "violations", "failures": [{"seed", "error"}], ...}``;
exit status 1 when a violation was found. A failure's seed replays it:
``python bench/simulate.py --steps 200 --seed SEED --days 0``.

Usage: python bench/simulate.py [--steps 20000] [--days 28] [--seed 1] [--examples-steps 40]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import signal
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import _paths  # noqa: F401  (first: the root on the path, this folder off it)
import structlog
from hypothesis import HealthCheck, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from aether.codec import text
from aether.config import Settings
from aether.errors import REDIS_OUTAGE, CheckpointError
from aether.identity.bootstrap import default_identity_dir
from aether.memory.retrieval.vector_source import RedisVectors
from aether.operations import REGISTRY, Caller, Parts
from aether.runtime.daemon import Daemon
from aether.runtime.inbox import Inbox
from aether.runtime.llm import CircuitBreaker, LLMClient
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.testing.model import ScriptedOpenAI, echo, structured
from bench.whole_product import WholeProduct

SESSIONS = ("alpha", "beta", "tools")
CRASHES = ("crash while parked", "crash with a message in hand", "crash during maintenance")
OUTAGES = ("outage while parked", "outage at the day's end")
NOTES_TAG = "field-notes"
START = datetime(2026, 3, 2, 8, tzinfo=UTC)


# -- part 1: operations ---------------------------------------------------------------------
def run_operations(home: Path, steps: int, first_seed: int, per_example: int) -> dict[str, Any]:
    WholeProduct.configure(home)
    failures: list[dict[str, Any]] = []
    current = first_seed
    started = time.monotonic()
    try:
        while WholeProduct.counters.steps < steps:
            machine = seed(current)(type(f"Seed{current}", (WholeProduct,), {}))
            left = steps - WholeProduct.counters.steps
            try:
                run_state_machine_as_test(
                    machine,
                    settings=settings(
                        # one long run per seed: its first examples are the simplest ones
                        max_examples=max(1, left // max(1, per_example // 2)),
                        stateful_step_count=per_example,
                        deadline=None,
                        database=None,
                        suppress_health_check=list(HealthCheck),
                        print_blob=True,
                    ),
                )
            except Exception as e:  # noqa: BLE001 - a violation: recorded with its seed
                failures.append(
                    {"seed": current, "error": "".join(traceback.format_exception(e))[-3000:]}
                )
            current += 1
    finally:
        WholeProduct.shutdown()
    counters = WholeProduct.counters
    return {
        "steps": counters.steps,
        "examples": counters.examples,
        "seeds": [first_seed, current - 1],
        "by_rule": dict(sorted(counters.by_rule.items())),
        "seconds": round(time.monotonic() - started, 1),
        "failures": failures,
    }


# -- part 2: the daemon's life ---------------------------------------------------------------
def _fault_plan(rng: random.Random, days: int = 366) -> list[set[str]]:
    """Each day's faults, by the seed: the daemon dies on about one day in three, Redis on
    one in seven, each at a moment the seed picks (while a turn waits for the operator, or
    at the day's end); the first week has one of each moment, whatever the seed."""
    plan: list[set[str]] = [set() for _ in range(days)]
    for n, fault in zip(rng.sample(range(7), 5), [*CRASHES, *OUTAGES], strict=True):
        plan[n].add(fault)
    for n in range(7, days):
        if rng.random() < 1 / 3:
            plan[n].add(rng.choice(CRASHES))
        if rng.random() < 1 / 7:
            plan[n].add(rng.choice(OUTAGES))
    return plan


class Life:
    """One agent's weeks: the daemon, its operator, its sessions, and the faults."""

    def __init__(self, home: Path, model: ScriptedOpenAI, seed: int) -> None:
        self.home = home
        self.rng = random.Random(seed)
        self.faults = _fault_plan(self.rng)
        self.server = EmbeddedRedis(Settings(home=home, redis_appendfsync="always"))
        self.now = START
        self.settings = Settings(
            home=home,
            namespace="life",
            workspace=home / "ws",
            # the scripted model's embeddings: the memories have vectors, so a tag can
            # have its own vector index (below)
            embedding={
                "provider": "openai",
                "model": "bow",
                "base_url": model.base_url,
                "dims": 64,
            },  # type: ignore[arg-type]
            daemon={"heartbeat_interval_s": 10**6, "maintenance_interval_s": 10**6},  # type: ignore[arg-type]
            tools={"approval_timeout_s": 120},  # type: ignore[arg-type]
        )
        (home / "ws").mkdir(parents=True, exist_ok=True)
        self.model = model
        self.sent: dict[str, str] = {}  # inbox id -> session
        self.asked_text: dict[str, str] = {}  # inbox id -> content
        self.memories: dict[str, str] = {}  # daily entry id -> text
        self.tagged: set[str] = set()  # the entries tagged NOTES_TAG
        self.erased: list[str] = []
        self.violations: list[str] = []
        self.exits: list[str] = []  # why the daemon's task ended on its own, if it did
        self.counts = {
            "messages": 0,
            "approvals": 0,
            "rollbacks": 0,
            "erasures": 0,
            "daemon_kills": 0,
            "redis_kills": 0,
            "faults_while_parked": 0,
            "maintenance_interrupted": 0,
            "undo_refused_after_daemon_writes": 0,
            "heartbeats": 0,
            "maintenance": 0,
            "scoped_indexes_made": 0,
            "tag_searches": 0,
            "tag_searches_scoped": 0,
        }

    def clock(self) -> float:
        return self.now.timestamp()

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.violations.append(f"day {(self.now - START).days}: {what}")

    async def open(self) -> None:
        self.client = await connect(self.settings)
        self.parts = Parts(self.settings, self.client, actor="operator")
        await self.parts.ready()
        await self.parts.identity.ensure(default_identity_dir())
        self.inbox = Inbox(self.client, self.parts.keys, "operator")

    async def start_daemon(self) -> None:
        breaker = CircuitBreaker(self.model.base_url, failures=1000)
        self.llm = LLMClient(self.model.base_url, "scripted", max_retries=0, breaker=breaker)
        daemon_client = await connect(self.settings)
        parts = Parts(self.settings, daemon_client, actor="daemon")
        await parts.ready()
        self.daemon = Daemon(parts, self.llm, consumer="life-daemon", clock=self.clock)
        self.daemon_client = daemon_client
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(self.daemon.run(self.stop))

    async def stop_daemon(self, crash: bool = False) -> None:
        if crash:
            self.task.cancel()
            self.counts["daemon_kills"] += 1
        else:
            self.stop.set()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(self.task, 30)
        await self.llm.aclose()
        await self.daemon_client.aclose()

    async def restart_after_exit(self) -> None:
        """The daemon's task ended on its own: note why, and start it again."""
        error = self.task.exception() if not self.task.cancelled() else None
        self.exits.append(repr(error)[:300])
        with contextlib.suppress(*REDIS_OUTAGE):
            await self.llm.aclose()
            await self.daemon_client.aclose()
        await self.start_daemon()

    async def op(self, name: str, **values: Any) -> Any:
        operation = REGISTRY[name]
        caller = Caller("operator", clock=self.clock)
        return operation.dump(await operation(self.parts, caller, operation.parse(values)))

    async def replies(self) -> dict[str, int]:
        count: dict[str, int] = {}
        for _, fields in await self.client.xrange(self.parts.keys.outbox()):
            ref = text(fields.get(b"in_reply_to", b""))
            count[ref] = count.get(ref, 0) + 1
        return count

    async def wait_replies(self, ids: list[str], timeout_s: float = 60) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = await self.replies()
            if all(found.get(i) for i in ids):
                return True
            await asyncio.sleep(0.05)
        return False

    async def send(self, content: str, session: str) -> str:
        message = await self.inbox.send(content, session=session)
        self.sent[message] = session
        self.asked_text[message] = content
        self.counts["messages"] += 1
        return message

    async def day(self, n: int) -> None:
        self.now = START + timedelta(days=n)
        # sessions talk; one asks for a write that waits for the operator
        asked = await self.send(
            f'CALL write_file {{"path": "day{n}.txt", "content": "d{n}"}}', "tools"
        )
        request = None
        deadline = time.monotonic() + 30
        while request is None and time.monotonic() < deadline:
            pending = await self.parts.approvals.pending()
            request = pending[0] if pending else None
            await asyncio.sleep(0.05)
        self.check(request is not None, "the tool call never asked for approval")
        if request is not None and self.faults[n] & {CRASHES[0], OUTAGES[0]}:
            await self.fault_while_parked(n, asked, request.id)
        others = [await self.send(f"how is the day {n} going, {s}?", s) for s in SESSIONS[:2]]
        # a session named after the person it is with, erased at the week's end by that name
        person = f"kestrup{n // 7}"
        others.append(await self.send(f"a word on day {n}", person))
        self.check(await self.wait_replies(others, 30), "a parked approval held up other sessions")
        beats = (await self.daemon.heartbeat_state.get()).beats
        await asyncio.wait_for(self.daemon.heartbeat(), 30)  # the heartbeat too, meanwhile
        self.counts["heartbeats"] += 1
        after = (await self.daemon.heartbeat_state.get()).beats
        self.check(after == beats + 1, "the heartbeat did not beat while a turn was parked")
        if request is not None:
            await self.op("approvals_approve", id=request.id[:10])
            self.counts["approvals"] += 1
        self.check(await self.wait_replies([asked], 30), "the approved turn was never answered")
        self.check((self.home / "ws" / f"day{n}.txt").exists(), "the approved write did not run")
        # memories, the heartbeat and maintenance at the day's time
        for i in range(3):
            self.now += timedelta(hours=1)
            entry = await self.op(
                "memory_log", content=f"day {n} note {i} token lifez{n}q{i}", tags=[NOTES_TAG]
            )
            self.memories[entry["id"]] = f"lifez{n}q{i}"
            self.tagged.add(entry["id"])
        if CRASHES[2] in self.faults[n]:  # the daemon dies in the middle of maintenance
            await self.interrupted_maintenance()
        if n % 2 == 0 or CRASHES[2] in self.faults[n]:
            # at the real reach it drops the tag's index (too few memories)
            await self.daemon.maintenance()
            self.counts["maintenance"] += 1
        await self.scope_the_notes()
        # the operator's rollback and undo while it runs
        cp = await self.op("checkpoint_create", label=f"day {n}")
        extra = await self.op("memory_log", content=f"a mistake on day {n}")
        await self.op("checkpoint_rollback", id=cp["id"])
        self.check(
            not await self.client.exists(self.parts.keys.daily_entry(extra["id"])),
            "the rollback left the mistake",
        )
        try:
            await self.op("checkpoint_undo")
        except CheckpointError as e:  # something wrote between the rollback and the undo
            await self.undo_after_daemon_writes(e)
        self.memories[extra["id"]] = f"a mistake on day {n}"
        self.counts["rollbacks"] += 1
        # an erasure while the daemon runs, once a week
        if n % 7 == 6:
            victim = next(iter(self.memories))
            token = self.memories.pop(victim)
            report = await self.op("erase", text=token)
            self.erased.append(token)
            self.counts["erasures"] += 1
            self.check(report.get("files") in ("clean", "rewritten"), f"erasure files: {report}")
            found = await self.op("erase_verify", text=token)
            self.check(found["clean"], f"erased text still found: {found['found']}")
            await self.erase_person(person)
            for other in self.erased[:-1]:
                again = await self.op("erase_verify", text=other)
                self.check(again["clean"], f"an earlier erased text came back: {again['found']}")

    async def undo_after_daemon_writes(self, refused: CheckpointError) -> None:
        """The undo was refused: state changed since the rollback. Only the daemon may have
        written meanwhile (its learner reads the sessions just answered, off the reply's
        path); the operator then returns to the rollback's pre-checkpoint, as the refusal
        says, which discards those writes."""
        last = json.loads(text(await self.client.lindex(self.parts.keys.rollbacks(), 0)))
        since = await self.client.xrange(
            self.parts.keys.journal(), min=f"({last['journal_entry']}", max="+"
        )
        writers = sorted({(text(f.get(b"a", b"")), text(f.get(b"r", b""))) for _, f in since})
        if not writers or any(actor != "daemon" for actor, _ in writers):
            self.check(False, f"undo refused ({refused}); written since the rollback: {writers}")
            return
        await self.op("checkpoint_rollback", id=last["pre_checkpoint"])
        self.counts["undo_refused_after_daemon_writes"] += 1

    async def fault_while_parked(self, n: int, asked: str, request: str) -> None:
        """The daemon dies, or Redis, while a turn waits for the operator: the turn (run
        again by the next daemon, or riding Redis's restart out) waits on the request it
        asked before, the only one pending."""
        before = self.model_asked(asked)
        if CRASHES[0] in self.faults[n]:
            await self.stop_daemon(crash=True)
            await self.start_daemon()
        if OUTAGES[0] in self.faults[n]:
            await self.outage()
            if self.task.done():
                await self.restart_after_exit()
        self.counts["faults_while_parked"] += 1
        if CRASHES[0] in self.faults[n]:  # the turn died with the daemon: it runs again
            deadline = time.monotonic() + 30
            while self.model_asked(asked) <= before and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            self.check(self.model_asked(asked) > before, "the parked turn was not run again")
        await asyncio.sleep(0.5)  # the run again asks (or finds) its request
        pending = [r.id for r in await self.parts.approvals.pending("tools")]
        self.check(pending == [request], f"after the fault, pending {pending}, not {request}")

    async def interrupted_maintenance(self) -> None:
        """A maintenance run cut short at a moment the seed picks, with the daemon: the
        next daemon's run must find the state whole (the audit) and finish the work."""
        run = asyncio.create_task(self.daemon.maintenance())
        await asyncio.sleep(self.rng.uniform(0, 0.3))
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run
        await self.stop_daemon(crash=True)
        await self.start_daemon()
        self.counts["maintenance_interrupted"] += 1

    def model_asked(self, inbox_id: str) -> int:
        """How often the model was asked to answer the message ``inbox_id`` carried."""
        content = self.asked_text.get(inbox_id)
        return sum(
            1
            for body in self.model.chat_requests()
            if content
            and any(
                content in str(m.get("content")) for m in body["messages"] if m["role"] == "user"
            )
        )

    async def outage(self) -> None:
        """Redis SIGKILLed and started again; back once it answers."""
        pid = self.server.status().pid
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            self.counts["redis_kills"] += 1
        await asyncio.sleep(0.5)
        await asyncio.to_thread(self.server.start)
        for _ in range(100):  # the daemon's supervisor rides the outage out
            try:
                await self.client.ping()
                break
            except REDIS_OUTAGE:
                await asyncio.sleep(0.2)

    async def scope_the_notes(self) -> None:
        """The notes' tag given its own vector index, as maintenance gives a tag past the
        reach (here the reach is 2), and this process's searches told: the tag-filtered
        searches of the audit walk it, across rollbacks, erasures, the daemon's crashes and
        Redis's restarts, until the daemon's next maintenance drops it."""
        vectors = self.parts.search.candidates.vectors
        index = vectors.index()
        if not isinstance(vectors, RedisVectors) or index is None:
            self.check(False, "the life's search has no Redis vector index")
            return
        made, _ = await vectors.scoped.sync(index, 2, 8)
        self.counts["scoped_indexes_made"] += len(made)
        for _ in range(200):
            vectors.scoped.forget()
            if await vectors.scoped.ready(index, NOTES_TAG) is not None:
                return
            await asyncio.sleep(0.05)
        self.check(False, "the notes' own index never finished scanning")

    async def erase_person(self, person: str) -> None:
        """Erase a session's name while the daemon serves it: its keys and messages go (the
        inbox and outbox entries too), and the daemon serves the other sessions on."""
        report = await self.op("erase", text=person)
        self.counts["erasures"] += 1
        self.check(report.get("files") in ("clean", "rewritten"), f"erasure files: {report}")
        for message in [m for m, session in self.sent.items() if session == person]:
            del self.sent[message]  # its entries went with it: never counted as answered
        named = [k async for k in self.client.scan_iter(match=f"*{person}*")]
        self.check(not named, f"keys named after an erased session: {named[:3]}")
        found = await self.op("erase_verify", text=person)
        self.check(found["clean"], f"an erased session's name still found: {found['found']}")
        self.erased.append(person)
        after = await self.send("still there after the erasure?", SESSIONS[0])
        self.check(await self.wait_replies([after], 30), "no reply after erasing a session")

    async def audit(self) -> None:
        keys = self.parts.keys
        replies = await self.replies()
        for message in self.sent:
            self.check(
                replies.get(message, 0) == 1,
                f"message {message} answered {replies.get(message, 0)} times",
            )
        for entry, token in self.memories.items():
            self.check(bool(await self.client.exists(keys.daily_entry(entry))), f"lost {token}")
        vectors = self.parts.search.candidates.vectors
        index = vectors.index()
        for entry in sorted(self.tagged & set(self.memories)):
            token = self.memories[entry]
            scoped = isinstance(vectors, RedisVectors) and index is not None
            if scoped and await vectors.scoped.ready(index, NOTES_TAG) is not None:
                self.counts["tag_searches_scoped"] += 1
            self.counts["tag_searches"] += 1
            found = await self.op("memory_search", query=token, limit=5, tags=[NOTES_TAG])
            hits = found["results"]
            self.check(entry in [h["id"] for h in hits], f"the {NOTES_TAG} search missed {token}")
            self.check(
                all(NOTES_TAG in (h.get("tags") or []) for h in hits),
                f"the {NOTES_TAG} search found other tags: {hits}",
            )
        self.check(not await self.client.exists(keys.write_hold()), "a write hold was left")
        self.check(not await self.client.exists(keys.admin_lock()), "an admin lock was left")
        chain = await self.parts.journal.verify()  # the daemon's, the operator's, the crashes'
        self.check(chain.ok, f"the journal chain is broken: {chain.breaks[:3]}")


async def live(home: Path, days: int, seed: int) -> dict[str, Any]:
    started = time.monotonic()
    with ScriptedOpenAI(responder=echo, extractor=structured) as model:
        life = Life(home, model, seed)
        await asyncio.to_thread(life.server.start)
        await life.open()
        await life.start_daemon()
        for n in range(days):
            await life.day(n)
            if CRASHES[1] in life.faults[n]:  # the daemon dies with a message in hand
                await life.send("a message the crash interrupts", "alpha")
                await asyncio.sleep(0.05)
                await life.stop_daemon(crash=True)
                await life.start_daemon()
            if OUTAGES[1] in life.faults[n]:  # Redis is killed and started again
                await life.outage()
            if life.task.done():  # it exited (Redis died while it started): restart it,
                await life.restart_after_exit()  # as the process manager restarts aether up
            await life.wait_replies(list(life.sent), 60)
            await life.audit()
        await life.stop_daemon()
        await life.client.aclose()
        await asyncio.to_thread(life.server.stop)
    return {
        "simulated_days": days,
        "violations": life.violations,
        "seconds": round(time.monotonic() - started, 1),
        "daemon_exits": life.exits,
        **life.counts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000, help="operation steps in all")
    parser.add_argument("--days", type=int, default=28, help="simulated days of daemon life")
    parser.add_argument("--seed", type=int, default=1, help="the first seed")
    parser.add_argument("--examples-steps", type=int, default=40, help="steps per example")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="aether-simulate-") as tmp:
        home = Path(tmp)
        server = EmbeddedRedis(Settings(home=home / "ops", redis_appendfsync="always"))
        server.start()
        try:
            ops = run_operations(home / "ops", args.steps, args.seed, args.examples_steps)
        finally:
            server.stop()
        life = (
            asyncio.run(live(home / "life", args.days, args.seed))
            if args.days
            else {"simulated_days": 0, "violations": [], "seconds": 0.0}
        )
    violations = len(ops["failures"]) + len(life["violations"])
    print(
        json.dumps(
            {
                "steps": ops["steps"],
                "simulated_days": life["simulated_days"],
                "violations": violations,
                "failures": ops["failures"] + [{"day": v} for v in life["violations"]],
                "operations": {k: v for k, v in ops.items() if k != "failures"},
                "daemon_life": {k: v for k, v in life.items() if k != "violations"},
            },
            indent=2,
        )
    )
    sys.exit(1 if violations else 0)


if __name__ == "__main__":
    main()
