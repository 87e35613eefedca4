"""The long-lived agent behind ``aether up``.

It answers the inbox (one message at a time, in order), beats (the autonomous tick in
which the agent works through its heartbeat instructions), runs maintenance on a
schedule, listens on ``ns:events`` for admin actions (a rollback done while it runs is
simply what its next step reads: all state lives in Redis), and optionally serves MCP
over streamable HTTP. Without an LLM it says once that the autonomous loop is paused
and runs the rest; inbox messages are then stored and answered with that error.

On SIGTERM/SIGINT it stops taking messages, gives the current one ``shutdown_grace_s``
to finish (else cancels it: the message stays pending and is delivered again at the
next start) and returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import structlog
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from aether.checkpoints.manager import Checkpoints
from aether.codec import text
from aether.errors import (
    AetherError,
    ConcurrentAdminError,
    ErasureStuckError,
    InvalidOperationError,
    LLMError,
    describe,
)
from aether.identity.flags import HeartbeatState
from aether.ids import check_id
from aether.maintenance.engine import MaintenanceEngine
from aether.maintenance.schedule import Schedule
from aether.memory.knowledge.learner import ConversationLearner
from aether.operations import Parts
from aether.runtime.agent import AgentRuntime
from aether.runtime.health import Health
from aether.runtime.inbox import Inbox, InboxMessage
from aether.runtime.lanes import SessionLanes
from aether.runtime.llm import LLMClient
from aether.runtime.on_parts import OnParts
from aether.runtime.spend import over_budget
from aether.runtime.supervisor import OUTAGE, Supervisor
from aether.runtime.tools import Tool
from aether.runtime.tools.mcp_servers import SEPARATOR, ServerLink, load_servers

log = structlog.get_logger(__name__)

HEARTBEAT_SESSION = "heartbeat"
HEARTBEAT_CHECKS = ["inbox", "tasks", "failures", "memory"]
CLAIM_EVERY_S = 30.0
OPEN_TASKS_SHOWN = 10
RETRY_PAUSE_S = 2.0
NO_LLM = (
    "no LLM configured: restart the daemon with AETHER_LLM__BASE_URL and AETHER_LLM__MODEL set; "
    "the message is stored"
)


async def finish_interrupted_rollback(checkpoints: Checkpoints) -> None:
    """Finish a rollback a crash cut short: until then every write waits on its hold."""
    try:
        finished = await checkpoints.finish_interrupted()
    except ConcurrentAdminError:
        return  # a rollback is running now; it finishes itself
    if finished is not None:
        log.warning("finished an interrupted rollback", **finished.to_dict())


async def finish_interrupted_erasure(
    parts: Parts, wait_s: float = 30.0, health: Health | None = None
) -> None:
    """Finish an erasure a crash cut short: until then every write waits on its hold.

    A crashed eraser's lock frees itself within seconds; a running one is waited for.
    When finishing fails the daemon still starts, ``degraded``: ``health`` says why and
    what resolves it, so the agent is never left unable to start.
    """
    eraser = parts.eraser("daemon")
    deadline = time.monotonic() + wait_s
    while await eraser.interrupted():
        try:
            report = await eraser.resume()
        except ConcurrentAdminError:
            if time.monotonic() > deadline:
                log.warning("an erasure holds writes and is still running; not waiting longer")
                return
            await asyncio.sleep(1.0)
            continue
        except Exception as e:  # the daemon must start whatever went wrong: say so instead
            reason = f"an interrupted erasure could not be finished: {e}"
            if not isinstance(e, ErasureStuckError):
                reason += " (run `aether erase resume`; `aether erase log` shows it)"
            log.error("interrupted erasure not finished", error=str(e), exc_info=True)
            if health is not None:
                health.erasure = reason
            return
        if health is not None:
            health.erasure = None
        if report is not None:
            log.warning("finished an interrupted erasure", id=report.id, files=report.files)
        return


class Daemon(OnParts):
    """One running agent on one namespace.

    Args:
        parts: the namespace's wired parts (``aether.app.Aether`` is one); the memory
            layer's embedder is loaded once, here.
        llm: the model, or ``None``.
        consumer: its name in the inbox's consumer group (unique per instance).
        health: where it reports the spending cap and its MCP servers (one is made when
            none is given).
        clock: the time its runtimes stamp messages with (a simulation injects its own).

    Raises:
        ConfigError: ``AETHER_MCP_SERVERS`` names a missing or malformed file.
    """

    def __init__(
        self,
        parts: Parts,
        llm: LLMClient | None,
        consumer: str | None = None,
        health: Health | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.parts = parts
        settings, memory = parts.settings, parts.memory
        self.llm = llm
        cfg = settings.daemon
        self.consumer = consumer or cfg.consumer
        self.inbox = Inbox(self.client, self.keys, self.consumer, cfg.outbox_maxlen)
        self.heartbeat_state = HeartbeatState(self.client, self.keys)
        self.schedule = Schedule(self.client, self.keys)
        self.services = parts.services()
        self._runtimes: dict[str, AgentRuntime] = {}
        self._attempts: dict[str, int] = {}
        self.answered = 0
        self._supervisor: Supervisor | None = None
        self._stopping = False
        self._recovered = False
        self._to_learn: asyncio.Queue[str] = asyncio.Queue()
        self.learner = ConversationLearner(memory, parts.beliefs(llm), llm)
        self.health = health or Health(ready=True)
        self.clock = clock
        servers = load_servers(settings.mcp_servers) if settings.mcp_servers else {}
        self.mcp_links = {
            name: ServerLink(name, config, settings.log_dir, self._offer_server_tools)
            for name, config in servers.items()
        }
        self.health.mcp = lambda: [link.status() for link in self.mcp_links.values()]

    def runtime(self, session: str) -> AgentRuntime:
        """The runtime of one chat session (made once, with the MCP tools known so far)."""
        if session not in self._runtimes:
            rt = AgentRuntime(
                self.parts,
                session=session,
                llm=self.llm,
                actor="daemon",
                ledger=self.services.ledger,
                clock=self.clock,
            )
            for link in self.mcp_links.values():
                for tool in self._server_tools(link):
                    rt.toolbox.register(tool, replace=True)
            self._runtimes[session] = rt
        return self._runtimes[session]

    def _server_tools(self, link: ServerLink) -> list[Tool]:
        """An MCP server's tools as the agent's: ``NAME__TOOL``, calling through the link."""
        out: list[Tool] = []
        timeout = self.settings.tools.mcp_timeout_s
        for listed in link.tools:
            name = f"{link.name}{SEPARATOR}{listed.name}"
            schema = dict(listed.input_schema or {})
            schema.setdefault("type", "object")
            if len(name) > 64 or schema.get("type") != "object":
                log.warning("mcp tool skipped: name or schema unusable", tool=name[:80])
                continue

            async def handler(arguments: dict[str, object], tool: str = listed.name) -> str:
                return await link.call(tool, dict(arguments), timeout)

            description = (listed.description or listed.name).strip()[:1024]
            out.append(Tool(name, description, schema, handler, optional=True, server=link.name))
        return out

    async def _offer_server_tools(self, link: ServerLink) -> None:
        """A server listed its tools: offer them in every session, record them."""
        tools = self._server_tools(link)
        for rt in self._runtimes.values():
            for tool in tools:
                rt.toolbox.register(tool, replace=True)
        try:
            for tool in tools:
                await self.services.registry.register(tool.name, tool.description, tool.parameters)
        except AetherError as e:
            log.warning("tool registry unavailable; tools not recorded", error=str(e))

    async def recover(self) -> None:
        """Re-create what a Redis restart may have lost: the library, group and index."""
        from aether.store.client import load_library

        await load_library(self.client)
        await self.inbox.ensure_group()
        await self.parts.search.ensure_index()
        await self.finish_interrupted()

    async def finish_interrupted(self) -> None:
        """Finish what a crash interrupted: a rollback, then an erasure (the one place).

        Start-up runs it before the identity and the indexes are touched; :meth:`run`
        runs it when start-up did not, and :meth:`recover` after every Redis restart.
        """
        await finish_interrupted_rollback(self.checkpoints)
        await finish_interrupted_erasure(self.parts, health=self.health)
        self._recovered = True

    async def run(self, stop: asyncio.Event, supervisor: Supervisor | None = None) -> None:
        """Serve until ``stop`` is set, then shut down (see the module docs).

        Args:
            stop: set to stop.
            supervisor: runs the inbox and event tasks through Redis outages and
                crashes (one is made when none is given).
        """
        supervisor = supervisor or Supervisor(self.client, Health(ready=True), stop, self.recover)
        self._supervisor = supervisor
        while True:  # Redis going away while the daemon starts is waited out, as later
            try:
                if not self._recovered:
                    await self.finish_interrupted()
                await self.inbox.ensure_group()
                await self.register_tools()
                break
            except OUTAGE as e:
                if not await supervisor.outage(e, task="start"):
                    return  # stopped while Redis was away
        if self.llm is None:
            log.warning(
                "no LLM configured: the autonomous loop is paused; inbox messages are "
                "stored and answered with that notice, maintenance runs"
            )
        cfg = self.settings.daemon
        self.schedule.add(
            "heartbeat",
            cfg.heartbeat_interval_s,
            self._through_outages("heartbeat", self.heartbeat),
            first_in_s=min(5.0, cfg.heartbeat_interval_s),
        )
        self.schedule.add(
            "maintenance",
            cfg.maintenance_interval_s,
            self._through_outages("maintenance", self.maintenance),
            first_in_s=min(60.0, cfg.maintenance_interval_s),
        )
        self.schedule.start()
        events = supervisor.start("events", lambda: self._listen(stop))
        inbox = supervisor.start("inbox", lambda: self._serve_inbox(stop))
        learning = supervisor.start("learn", lambda: self._learn(stop))
        servers = [
            supervisor.start(f"mcp:{name}", functools.partial(link.run, stop))
            for name, link in self.mcp_links.items()
        ]
        try:
            await stop.wait()
        finally:
            self._stopping = True
            self.schedule.shutdown()
            await self._finish(inbox)
            with contextlib.suppress(*OUTAGE):
                await self.inbox.leave()
            for task in (events, learning, *servers):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await self.services.close()

    def _through_outages(
        self, name: str, job: Callable[[], Awaitable[None]]
    ) -> Callable[[], Awaitable[None]]:
        """A scheduled job that waits out a Redis outage instead of failing noisily."""

        async def guarded() -> None:
            try:
                await job()
            except OUTAGE as e:
                if self._supervisor is None:
                    raise
                await self._supervisor.outage(e, task=name)

        return guarded

    async def register_tools(self) -> None:
        """Record the agent's tools in the registry (a changed schema is a new version)."""
        try:
            for schema in self.runtime(self.settings.daemon.session).toolbox.schemas():
                fn = schema["function"]
                await self.services.registry.register(
                    fn["name"], fn["description"], fn["parameters"]
                )
        except AetherError as e:
            log.warning("tool registry unavailable; tools not recorded", error=str(e))

    async def _finish(self, inbox: asyncio.Task[None]) -> None:
        """Give the message in hand the grace period, then cancel (it stays pending)."""
        try:
            await asyncio.wait_for(
                asyncio.shield(inbox), timeout=self.settings.daemon.shutdown_grace_s
            )
        except TimeoutError:
            log.warning("shutting down mid-message; it will be delivered again at the next start")
            inbox.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await inbox

    async def _serve_inbox(self, stop: asyncio.Event) -> None:
        """Answer what was pending at start, then new messages, each session in its lane.

        A session's messages are answered one at a time, in order, by its lane; sessions
        are answered side by side, so a turn parked on an operator's approval holds up
        only its own session. The daemon holds the namespace's lease, so messages another
        consumer still holds were left by a daemon that died: they are taken over at once.
        """
        lanes = SessionLanes(self._answer, stop)
        try:
            for message in await self.inbox.pending() + await self.inbox.claim_stale(0):
                if stop.is_set():
                    return
                lanes.put(self._session_of(message), message)
            await self.inbox.forget_dead()
            loop = asyncio.get_running_loop()
            next_claim = loop.time() + CLAIM_EVERY_S
            while not stop.is_set():
                lanes.raise_failure()
                if loop.time() >= next_claim:
                    next_claim = loop.time() + CLAIM_EVERY_S
                    idle_ms = int(self.settings.daemon.claim_idle_s * 1000)
                    batch = await self.inbox.pending() + await self.inbox.claim_stale(idle_ms)
                else:
                    batch = await self.inbox.read(block_ms=500)
                for message in batch:
                    if stop.is_set():
                        break  # delivered, not answered: pending, so delivered again at restart
                    lanes.put(self._session_of(message), message)
            await lanes.drain()
        finally:
            await lanes.close()

    def _session_of(self, message: InboxMessage) -> str:
        return message.session or self.settings.daemon.session

    async def _answer(self, message: InboxMessage) -> None:
        """A lane's work: answer one message, retrying while it stays pending."""
        while await self.handle(message) is None and not self._stopping:
            pass  # left pending for a retry (the LLM failed): try again, in order

    async def handle(self, message: InboxMessage) -> str | None:
        """Answer one message; returns the outbox id (``None``: left pending to retry)."""
        session = message.session or self.settings.daemon.session
        bound = log.bind(message=message.id, session=session)
        try:
            check_id(session, "session id")
            if not message.content.strip():
                raise InvalidOperationError("the message has no content")
        except InvalidOperationError as e:
            return await self._reply(message, "", session, error=str(e))
        rt = self.runtime(session)
        stored = await rt.chats.find_ref(session, f"reply:{message.id}")
        if stored is not None:  # answered before a crash, not yet on the outbox
            return await self._reply(message, str(stored["content"]), session)
        if self.llm is None:
            if await rt.chats.find_ref(session, message.id) is None:
                await rt.chats.append(
                    session,
                    message.role if message.role in ("user", "system") else "user",
                    message.content,
                    ref=message.id,
                )
            return await self._reply(message, "", session, error=NO_LLM)
        paused = await self.over_budget()
        if paused is not None:
            if await rt.chats.find_ref(session, message.id) is None:
                await rt.chats.append(session, "user", message.content, ref=message.id)
            return await self._reply(message, "", session, error=paused)
        attempts = self._attempts.get(message.id, 0) + 1
        self._attempts[message.id] = attempts
        try:
            result = await rt.step(message.content, ref=message.id)
        except LLMError as e:
            if (
                e.retryable
                and not self.llm.breaker.is_open()  # a retry would fail at once: answer now
                and max(attempts, message.deliveries) < self.settings.daemon.max_deliveries
            ):
                bound.warning("LLM failed; the message stays pending for a retry", error=str(e))
                await asyncio.sleep(RETRY_PAUSE_S)
                return None
            return await self._reply(message, "", session, error=str(e))
        except AetherError as e:
            return await self._reply(message, "", session, error=str(e))
        except (RedisConnectionError, RedisTimeoutError):
            raise  # Redis is away: the message stays pending and is answered once it is back
        except Exception as e:  # noqa: BLE001 - a bug: answer in one line, traceback to the log
            bound.error("answering failed unexpectedly", exc_info=True)
            return await self._reply(message, "", session, error=describe(e))
        bound.info("answered", tools=len(result.tool_runs), usage=round(result.usage, 3))
        return await self._reply(message, result.reply, session)

    async def _learn(self, stop: asyncio.Event) -> None:
        """Learn from the sessions just answered, off the reply's path, a batch at a time."""
        while not stop.is_set():
            try:
                first = await asyncio.wait_for(self._to_learn.get(), timeout=1.0)
            except TimeoutError:
                continue
            sessions = {first}
            while not self._to_learn.empty():
                sessions.add(self._to_learn.get_nowait())
            for session in sorted(sessions):
                try:
                    learned = await self.learner.learn(session)
                except AetherError as e:
                    log.warning("learning from the conversation failed", error=str(e))
                    continue
                log.info("learned", session=session, facts=learned.facts, turns=learned.turns)

    async def _reply(
        self, message: InboxMessage, content: str, session: str, error: str | None = None
    ) -> str | None:
        self._to_learn.put_nowait(session)
        extra = {"session": session}
        if error:
            extra["error"] = error
        outbox_id = await self.inbox.reply(message, content, **extra)
        self._attempts.pop(message.id, None)
        if outbox_id is not None:
            self.answered += 1
        return outbox_id

    async def heartbeat(self) -> None:
        """One autonomous tick (scheduled)."""
        if self.health.erasure and not await self.parts.eraser("daemon").interrupted():
            self.health.erasure = None  # the operator finished it (`aether erase resume`)
        check = await self.heartbeat_state.beat(HEARTBEAT_CHECKS)
        log.info("heartbeat", check=check, autonomous=self.llm is not None)
        if self.llm is None:
            return
        paused = await self.over_budget()
        if paused is not None:
            log.warning("heartbeat paused", why=paused)
            return
        depth = await self.inbox.depth()
        tasks = (await self.parts.tasks.list("open"))[:OPEN_TASKS_SHOWN]
        listed = "\n".join(
            f"- [{t.id}] p{t.priority} {t.title}" + (f" (due {t.due})" if t.due else "")
            for t in tasks
        )
        prompt = (
            f"Heartbeat tick. Work through your heartbeat instructions. Focus of this "
            f"tick: {check}. Inbox: {depth['waiting']} waiting, {depth['pending']} in "
            "progress.\nOpen tasks:\n" + (listed or "- none") + "\n"
            "Use your tools; reply with one line on what you did."
        )
        try:
            await self.runtime(HEARTBEAT_SESSION).step(prompt)
        except AetherError as e:
            await self.heartbeat_state.alert(f"heartbeat failed: {e}")

    async def over_budget(self) -> str | None:
        """Why the agent is paused by the daily spending cap (also shown in its health)."""
        try:
            reason = await over_budget(
                # the ledger is indexed by the wall clock (stream ids), so the cap is too
                self.services.ledger,
                self.settings.llm.daily_budget_usd,
                time.time(),
            )
        except AetherError as e:
            log.warning("the ledger is unavailable; the spending cap is not checked", error=str(e))
            return None
        self.health.budget = reason
        return reason

    async def maintenance(self) -> None:
        """The scheduled maintenance run (at the daemon's clock's time)."""
        engine = MaintenanceEngine(
            self.memory,
            self.checkpoints,
            self.llm,
            actor="daemon",
            beliefs=self.settings.beliefs,
            search=self.parts.search,
        )
        await engine.run(now=datetime.fromtimestamp(self.clock(), UTC))

    async def _listen(self, stop: asyncio.Event) -> None:
        """Hear admin actions on ``ns:events`` (rollbacks, identity changes)."""
        pubsub = self.client.pubsub()
        await pubsub.subscribe(self.keys.events())
        try:
            while not stop.is_set():
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                if message is None:
                    continue
                try:
                    event = json.loads(text(message["data"]))
                except (ValueError, TypeError):
                    continue
                log.info("event", type=event.get("type"))
        finally:
            await pubsub.unsubscribe()
            await pubsub.aclose()  # type: ignore[no-untyped-call]
