"""The daemon: inbox/outbox exactly once, schedule claims, maintenance, status, send.

The end-to-end test runs ``aether up`` as a subprocess against the scripted
OpenAI-compatible server, talks to it with the system ``redis-cli``, SIGKILLs it in the
middle of a message and checks the message is answered exactly once after a restart.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.codec import byte_map, text
from aether.config import Settings
from aether.errors import ConcurrentAdminError
from aether.identity.bootstrap import default_identity_dir
from aether.keys import Keyspace
from aether.maintenance.engine import DIGEST_TAG, REFLECTION_TAG, MaintenanceEngine
from aether.maintenance.schedule import Schedule
from aether.memory.retrieval.search import MemorySearch
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.chat import ChatSessions
from aether.memory.tiers.daily import DailyLog
from aether.memory.tiers.longterm import LongTermMemory
from aether.operations import Parts
from aether.runtime.daemon import NO_LLM, Daemon
from aether.runtime.inbox import Inbox
from aether.runtime.llm import LLMClient
from aether.testing.model import ScriptedOpenAI, completion, echo, structured
from tests.conftest import dump_state, free_port, run_cli

# ---------------------------------------------------------------- in-process parts


async def _daemon(settings: Settings, client: Redis, llm: LLMClient | None) -> Daemon:
    parts = Parts(settings.model_copy(update={"embedding": {"provider": "none"}}), client)
    await parts.search.ensure_index()
    daemon = Daemon(parts, llm)
    await daemon.runtime("main").identity.ensure(default_identity_dir())
    await daemon.inbox.ensure_group()
    return daemon


async def _outbox(client: Redis, keys: Keyspace) -> list[dict[str, str]]:
    entries: Any = await client.xrange(keys.outbox())
    return [{text(k): text(v) for k, v in byte_map(f).items()} for _, f in entries]


async def test_without_an_llm_messages_are_stored_and_answered_with_the_notice(
    settings: Settings, client: Redis
) -> None:
    daemon = await _daemon(settings, client, None)
    first = await daemon.inbox.send("hello there")
    await daemon.inbox.send("   ")
    await daemon.inbox.send("bad session", session="no spaces allowed")
    for message in await daemon.inbox.read(block_ms=100, count=10):
        assert await daemon.handle(message) is not None
    out = await _outbox(client, daemon.keys)
    assert out[0]["in_reply_to"] == first
    assert out[0]["error"] == NO_LLM
    assert "no content" in out[1]["error"] and "invalid session id" in out[2]["error"]
    stored = await ChatSessions(daemon.memory).messages("main")
    assert [m["content"] for m in stored] == ["hello there"]
    assert (await daemon.inbox.depth()) == {"waiting": 0, "pending": 0}


async def test_a_pending_message_is_answered_once_even_by_two_consumers(
    settings: Settings, client: Redis
) -> None:
    with ScriptedOpenAI(responder=lambda body: completion("hi back")) as server:
        llm = LLMClient(server.base_url, "scripted", max_retries=0)
        daemon = await _daemon(settings, client, llm)
        message_id = await daemon.inbox.send("hello")
        [message] = await daemon.inbox.read(block_ms=100)
        # the daemon "crashed" after reading: the message is pending, delivered again
        [again] = await daemon.inbox.pending()
        assert again.id == message_id and again.deliveries >= 2
        other = Inbox(client, daemon.keys, consumer="other")
        assert await daemon.handle(again) is not None
        assert await other.reply(message, "a second answer") is None  # already answered
        out = await _outbox(client, daemon.keys)
        assert [(o["in_reply_to"], o["content"]) for o in out] == [(message_id, "hi back")]
        await llm.aclose()


async def test_a_failing_llm_leaves_the_message_pending_then_reports_it(
    settings: Settings, client: Redis
) -> None:
    with ScriptedOpenAI() as server:
        server.failing = True
        llm = LLMClient(server.base_url, "scripted", max_retries=0)
        s = settings.model_copy(
            update={"daemon": settings.daemon.model_copy(update={"max_deliveries": 2})}
        )
        daemon = await _daemon(s, client, llm)
        import aether.runtime.daemon as daemon_module

        daemon_module.RETRY_PAUSE_S = 0.01
        await daemon.inbox.send("are you there?")
        [message] = await daemon.inbox.read(block_ms=100)
        assert await daemon.handle(message) is None  # left pending for a retry
        assert await _outbox(client, daemon.keys) == []
        [retry] = await daemon.inbox.pending()
        assert await daemon.handle(retry) is not None
        [out] = await _outbox(client, daemon.keys)
        assert "500" in out["error"]
        # the user's message is in the conversation once, whatever the retries
        stored = await ChatSessions(daemon.memory).messages("main")
        assert [m["content"] for m in stored] == ["are you there?"]
        await llm.aclose()


async def test_two_daemons_never_run_the_same_job_slot(client: Redis, keys: Keyspace) -> None:
    ran: list[str] = []
    schedules = [Schedule(client, keys), Schedule(client, keys)]
    for name, schedule in zip("ab", schedules, strict=True):

        async def job(name: str = name) -> None:
            ran.append(name)

        schedule.add("tick", 1.0, job, first_in_s=0.1)
        schedule.add("tick", 1.0, job, first_in_s=0.1)  # same id: replaced, not doubled
        schedule.start()
    await asyncio.sleep(3.4)
    for schedule in schedules:
        schedule.shutdown()
    assert 3 <= len(ran) <= 4  # one run per 1 s slot, whichever daemon claimed it


async def _old_day(layer: MemoryLayer, days_ago: int, n: int) -> list[dict[str, Any]]:
    # noon, so that the n entries a minute apart fall on one day whenever the test runs
    when = (datetime.now(UTC) - timedelta(days=days_ago)).replace(hour=12, minute=0)
    return [
        await DailyLog(layer).log(
            f"deployed service {i}; the billing migration ran fine",
            tags=["deploy"],
            timestamp=when + timedelta(minutes=i),
        )
        for i in range(n)
    ]


async def test_maintenance_compresses_prunes_fixes_ttls_and_reflects(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    s = settings.model_copy(update={"embedding": {"provider": "none"}})
    layer = MemoryLayer.open(s, client)
    await MemorySearch(layer).ensure_index()
    checkpoints = Checkpoints(client, keys, keep=3)
    old = await _old_day(layer, 10, 5)
    many = Checkpoints(client, keys, keep=50)
    for i in range(4):
        await DailyLog(layer).log(f"today note {i} about the garden")
    for _ in range(5):
        await many.create()
    await client.set(keys.scratchpad("forever"), "no ttl")
    engine = MaintenanceEngine(layer, checkpoints)
    before = await dump_state(client, keys)
    dry = await engine.run(dry_run=True)
    assert {st.name: st.changed for st in dry.steps} == {
        "compress_daily": 5,
        "prune_checkpoints": 2,
        "scratchpad_ttls": 1,
        "learn": 0,
        "reflect": 1,
        "beliefs": 0,
        "scoped_indexes": 0,
    }
    assert await dump_state(client, keys) == before
    assert await client.ttl(keys.scratchpad("forever")) == -1
    report = await engine.run()
    steps = {st.name: st for st in report.steps}
    assert steps["compress_daily"].changed == 5 and steps["compress_daily"].checkpoint
    assert len(await checkpoints.list()) == 3  # the pre-compression one among them
    assert 0 < await client.ttl(keys.scratchpad("forever")) <= 3600
    docs = [await LongTermMemory(layer).get(i) for i in await LongTermMemory(layer).ids()]
    digest = next(d for d in docs if DIGEST_TAG in d["tags"])
    assert sorted(digest["sources"]) == sorted(d["id"] for d in old)
    assert "billing migration" in digest["content"]
    assert any(REFLECTION_TAG in d["tags"] for d in docs)
    assert not await DailyLog(layer).list_day(date_of(old[0]))
    hits = await MemorySearch(layer).search("billing migration", limit=3)
    assert hits[0].doc["kind"] == "longterm"
    # a second run finds nothing more to do, and rolling back to the pre-compression
    # checkpoint brings the old entries back
    again = {st.name: st.changed for st in (await engine.run()).steps}
    assert again["compress_daily"] == 0 and again["reflect"] == 0
    await checkpoints.rollback_to(steps["compress_daily"].checkpoint or "")
    assert len(await DailyLog(layer).list_day(date_of(old[0]))) == 5


def date_of(doc: dict[str, Any]) -> Any:
    from datetime import date

    return date.fromisoformat(doc["day"])


async def test_maintenance_runs_never_overlap(
    settings: Settings, client: Redis, keys: Keyspace
) -> None:
    layer = MemoryLayer.open(
        settings.model_copy(update={"embedding": {"provider": "none"}}), client
    )
    await client.set(keys.job_lock("maintenance.running"), "someone", ex=30)
    with pytest.raises(ConcurrentAdminError):
        await MaintenanceEngine(layer, Checkpoints(client, keys)).run()


# ---------------------------------------------------------------- the real daemon


class SlowModel:
    """Answers chat requests; the first one mentioning SLOW blocks until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.slow_started = threading.Event()
        self.slow_seen = 0

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        last = str(body["messages"][-1].get("content"))
        if "SLOW" in last:
            self.slow_seen += 1
            if self.slow_seen == 1:
                self.slow_started.set()
                self.release.wait(60)
            return completion("slow answer")
        history = " ".join(str(m.get("content")) for m in body["messages"])
        return completion(f"echo: {last[-40:]} | saw-secret={'PLUM-42' in history}")


@pytest.fixture
def model() -> Iterator[tuple[ScriptedOpenAI, SlowModel]]:
    slow = SlowModel()
    with ScriptedOpenAI(responder=slow) as server:
        yield server, slow
        slow.release.set()


def _env(cli_env: dict[str, str], server: ScriptedOpenAI) -> dict[str, str]:
    return {
        **cli_env,
        "AETHER_EMBEDDING__PROVIDER": "none",
        "AETHER_LLM__BASE_URL": server.base_url,
        "AETHER_LLM__MODEL": "scripted",
        "AETHER_LLM__MAX_RETRIES": "0",
        "AETHER_DAEMON__HEARTBEAT_INTERVAL_S": "3600",
        "AETHER_DAEMON__MAINTENANCE_INTERVAL_S": "3600",
    }


def _cli(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_cli(env, *args, timeout=timeout)


def _start(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "aether", "up", *args],
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = _cli(env, "status", "--json")
        if status.returncode == 0 and json.loads(status.stdout)["daemon"]["pid"] == proc.pid:
            return proc
        assert proc.poll() is None, log.read_text()[-2000:]
        time.sleep(0.3)
    raise AssertionError("the daemon did not come up: " + log.read_text()[-2000:])


def _redis_cli(env: dict[str, str], *args: str) -> str:
    url = json.loads(_cli(env, "--json", "redis", "url").stdout)
    binary = shutil.which("redis-cli")
    assert binary, "the system redis-cli is needed for this test"
    command = [binary, "-s", url["socket"], "--no-auth-warning", "-a", url["password"], *args]
    out = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True)
    return out.stdout.strip()


def _replies(env: dict[str, str], ns: str, message_id: str) -> list[dict[str, str]]:
    raw = _redis_cli(env, "--json", "XRANGE", f"{ns}:outbox", "-", "+")
    entries = json.loads(raw) if raw else []
    out = []
    for _, fields in entries:
        pairs = dict(zip(fields[::2], fields[1::2], strict=True))
        if pairs.get("in_reply_to") == message_id:
            out.append(pairs)
    return out


def _wait_reply(
    env: dict[str, str], ns: str, message_id: str, timeout: float = 60
) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _replies(env, ns, message_id)
        if found:
            return found[0]
        time.sleep(0.2)
    raise AssertionError(f"no reply to {message_id}")


def test_the_daemon_end_to_end(
    cli_env: dict[str, str],
    namespace: str,
    tmp_path: Path,
    model: tuple[ScriptedOpenAI, SlowModel],
) -> None:
    server, slow = model
    mcp_port = free_port()
    env = {**_env(cli_env, server), "AETHER_MCP__PORT": str(mcp_port), "AETHER_MCP__TOKEN": "t0k"}
    log = tmp_path / "daemon.log"
    proc = _start(env, log)
    try:
        # status from a shell without the daemon's settings shows what the daemon runs
        elsewhere = {k: v for k, v in env.items() if not k.startswith(("AETHER_LLM", "AETHER_MCP"))}
        shown = json.loads(_cli(elsewhere, "status", "--json").stdout)["running"]
        assert shown["source"] == "daemon" and shown["model"]["name"] == "scripted"
        assert shown["model"]["endpoint"] == server.base_url.split("/")[2]
        assert shown["mcp"] == {
            "transport": "streamable-http",
            "host": "127.0.0.1",
            "port": mcp_port,
            "auth": True,
        }
        human = _cli(elsewhere, "status").stdout
        assert "runs (daemon):" in human and f"streamable-http on 127.0.0.1:{mcp_port}" in human
        assert f"MCP 127.0.0.1:{mcp_port}" in human and "model: scripted at" in human
        # a person talks to it with plain redis-cli...
        first = _redis_cli(
            env,
            "XADD",
            f"{namespace}:inbox",
            "*",
            "role",
            "user",
            "content",
            "hello from redis-cli",
        )
        reply = _wait_reply(env, namespace, first)
        assert reply["content"].startswith("echo: ") and "hello from redis-cli" in reply["content"]
        # ...or with aether send
        sent = _cli(env, "send", "my favourite fruit code is PLUM-42")
        assert sent.returncode == 0 and sent.stdout.startswith("echo: "), sent.stderr
        # SIGKILL in the middle of a message
        slow_id = _redis_cli(
            env, "XADD", f"{namespace}:inbox", "*", "role", "user", "content", "SLOW question"
        )
        assert slow.slow_started.wait(30)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        slow.release.set()
        assert _replies(env, namespace, slow_id) == []
        proc = _start(env, log)
        assert _wait_reply(env, namespace, slow_id)["content"] == "slow answer"
        time.sleep(1.5)
        assert len(_replies(env, namespace, slow_id)) == 1  # answered exactly once
        messages = json.loads(_cli(env, "--json", "memory", "chat", "show", "main").stdout)
        contents = [m["content"] for m in messages]
        assert contents.count("SLOW question") == 1 and contents.count("slow answer") == 1
        # admin while running: a rollback is what the next reply sees
        cp = json.loads(_cli(env, "--json", "checkpoint", "create", "--label", "before").stdout)
        secret = _cli(env, "send", "the secret is PLUM-42 again")
        assert "saw-secret=True" in secret.stdout
        rolled = _cli(env, "checkpoint", "rollback", cp["id"], "--yes")
        assert rolled.returncode == 0, rolled.stderr
        after = _cli(env, "send", "what do you remember?")
        assert after.returncode == 0, after.stderr
        last = server.chat_requests()[-1]["messages"]
        assert not any("the secret is PLUM-42 again" in str(m.get("content")) for m in last)
        status = json.loads(_cli(env, "status", "--json").stdout)
        assert status["alive"] and status["inbox"] == {"waiting": 0, "pending": 0}
        # SIGTERM: a clean exit within 10 s, and status says it is down
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert time.monotonic() - start < 10
        down = _cli(elsewhere, "status")
        assert down.returncode == 1 and "runs (as configured here: no daemon):" in down.stdout
        assert "model: none" in down.stdout and "MCP off" in down.stdout
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def _poll(env: dict[str, str], args: tuple[str, ...], wanted: Callable[[Any], bool]) -> Any:
    deadline = time.monotonic() + 30
    while True:
        out = _cli(env, "--json", *args)
        found = json.loads(out.stdout) if out.returncode == 0 else None
        if found is not None and wanted(found):
            return found
        assert time.monotonic() < deadline, f"{args}: {out.stdout[-800:]} {out.stderr[-800:]}"
        time.sleep(0.3)


def _extraction(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted model's knowledge extraction: good for Caroline, malformed otherwise."""
    if "Caroline" not in json.dumps(body):
        return completion("not json {")
    return completion(
        json.dumps(
            {
                "facts": [{"statement": "Caroline went to the LGBTQ support group on 7 May"}],
                "entities": [
                    {"name": "Caroline", "type": "person"},
                    {"name": "LGBTQ support group", "type": "organisation"},
                ],
                "relations": [
                    {"source": "Caroline", "type": "attended", "target": "LGBTQ support group"}
                ],
            }
        )
    )


def test_the_daemon_learns_from_what_it_answers(
    cli_env: dict[str, str], namespace: str, tmp_path: Path
) -> None:
    slow = SlowModel()
    with ScriptedOpenAI(responder=slow, extractor=_extraction) as server:
        env = _env(cli_env, server)
        proc = _start(env, tmp_path / "daemon.log")
        try:
            cp = json.loads(_cli(env, "--json", "checkpoint", "create").stdout)
            said = "Caroline went to the LGBTQ support group on 7 May"
            assert _cli(env, "send", said).stdout.startswith("echo: ")
            edges = _poll(env, ("graph", "expand", "Caroline"), bool)
            assert {(e["source"], e["type"], e["target"]) for e in edges} >= {
                ("Caroline", "attended", "LGBTQ support group")
            }
            beliefs = _poll(env, ("belief", "list"), bool)
            assert any("7 May" in b["content"] for b in beliefs)
            # a malformed extraction: the turn is read by the deterministic extractors
            assert _cli(env, "send", "Bob lives in Paris.").returncode == 0
            places = _poll(env, ("graph", "find", "Paris"), bool)
            assert places[0]["type"] == "place"
            # learning is journaled with the conversation: a rollback takes it back
            rolled = _cli(env, "checkpoint", "rollback", cp["id"], "--yes")
            assert rolled.returncode == 0, rolled.stderr
            assert json.loads(_cli(env, "--json", "graph", "find", "Caroline").stdout) == []
            assert json.loads(_cli(env, "--json", "belief", "list").stdout) == []
            assert proc.poll() is None  # and the daemon still answers
            assert _cli(env, "send", "still there?").stdout.startswith("echo: ")
        finally:
            proc.terminate()
            proc.wait(10)


def test_the_daemon_learns_facts_and_the_operator_replaces_forgets_and_erases(
    cli_env: dict[str, str], namespace: str, tmp_path: Path
) -> None:
    """Issue 63 through the real daemon: it learns from what the user says (not from its
    own echo, not from questions), then the operator replaces a fact by description,
    forgets a person by subject and erases an identifier, with the daemon running."""
    with ScriptedOpenAI(responder=echo, extractor=structured) as server:
        env = _env(cli_env, server)
        proc = _start(env, tmp_path / "daemon.log")
        try:
            for said in (
                "I live in Lisbon",
                "Where do I live?",
                "Marta works at Globex and Ivo works at Globex",
            ):
                assert "I heard" in _cli(env, "send", said).stdout  # an echo of the user

            def learned(found: Any) -> bool:
                held = {b["content"] for b in found}
                return {"User lives in Lisbon", "Ivo works at Globex"} <= held

            beliefs = [b["content"] for b in _poll(env, ("belief", "list"), learned)]
            assert not any("?" in b or "heard" in b or "scripted" in b for b in beliefs), beliefs
            replaced = _cli(env, "--json", "memory", "replace", "where I live", "I live in Porto")
            assert replaced.returncode != 0  # no terminal: --yes is required
            done = json.loads(
                _cli(
                    env, "--json", "memory", "replace", "where I live", "I live in Porto", "--yes"
                ).stdout
            )
            assert [r["content"] for r in done["replaced"] if r["kind"] == "belief"] == [
                "User lives in Lisbon"
            ]
            forgot = json.loads(
                _cli(env, "--json", "memory", "forget", "--about", "Marta", "--yes").stdout
            )
            assert forgot["items"] and all("Ivo" not in i["content"] for i in forgot["items"])
            held = {b["content"] for b in json.loads(_cli(env, "--json", "belief", "list").stdout)}
            assert "I live in Porto" in held and "Ivo works at Globex" in held
            assert not any(b.startswith(("Marta", "User lives in Lisbon")) for b in held)
            for line in ("Invoice INV-7731 is disputed.", "Invoice INV-7731B is paid."):
                assert _cli(env, "memory", "log", line).returncode == 0
            erased = _cli(env, "--json", "erase", "inv 7731", "--yes")
            assert erased.returncode == 0, erased.stderr
            found = json.loads(_cli(env, "--json", "memory", "search", "invoice").stdout)
            assert [r["content"] for r in found] == ["Invoice INV-7731B is paid."]
            # a session named after a person goes by that name, with the daemon serving it
            for session in ("marta-quill", "with-marta-quill"):
                said = _cli(env, "send", "--session", session, "see you on Monday")
                assert "I heard" in said.stdout, said.stderr
            erased = _cli(env, "--json", "erase", "Marta Quill", "--yes")
            assert erased.returncode == 0, erased.stderr
            chats = json.loads(_cli(env, "--json", "memory", "chat", "list").stdout)
            assert "with-marta-quill" in [c["id"] for c in chats]
            assert "marta-quill" not in [c["id"] for c in chats]
            assert _cli(env, "erase", "verify", "Marta Quill").returncode == 0
            assert proc.poll() is None
            assert "I heard" in _cli(env, "send", "still there?").stdout
        finally:
            proc.terminate()
            proc.wait(10)


def test_one_process_runs_a_fleet_of_agents(
    cli_env: dict[str, str], namespace: str, tmp_path: Path
) -> None:
    slow = SlowModel()
    with ScriptedOpenAI(responder=slow) as server:
        env = _env(cli_env, server)
        other = {**env, "AETHER_NAMESPACE": f"{{{namespace}-b}}"}
        fleet = f"{namespace},{other['AETHER_NAMESPACE']}"
        proc = _start(env, tmp_path / "fleet.log", "--agents", fleet)
        try:
            for agent_env in (env, other):  # each its own inbox, lease and history
                status = _poll_status(agent_env, proc.pid)
                assert status["alive"]
                said = _cli(agent_env, "send", f"hello {agent_env['AETHER_NAMESPACE']}")
                assert said.returncode == 0 and agent_env["AETHER_NAMESPACE"] in said.stdout
            history = json.loads(_cli(other, "--json", "memory", "chat", "show", "main").stdout)
            assert history[0]["content"] == f"hello {other['AETHER_NAMESPACE']}"
            second = _cli(other, "up", timeout=60)  # the namespace's lease is held
            assert second.returncode == 1 and str(proc.pid) in second.stderr
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(15) == 0
            assert _cli(env, "status").returncode == 1 and _cli(other, "status").returncode == 1
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    bad = _cli(env, "up", "--agents", "ok,has space")
    assert bad.returncode == 64 and "namespace 'has space'" in bad.stderr


def _poll_status(env: dict[str, str], pid: int) -> Any:
    deadline = time.monotonic() + 60
    while True:
        out = _cli(env, "status", "--json")
        if out.returncode == 0 and json.loads(out.stdout)["daemon"]["pid"] == pid:
            return json.loads(out.stdout)
        assert time.monotonic() < deadline, out.stdout + out.stderr
        time.sleep(0.3)


def test_send_says_when_no_daemon_runs(cli_env: dict[str, str]) -> None:
    out = _cli({**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}, "send", "anyone?")
    assert out.returncode == 1 and "not running" in out.stderr
    empty = _cli({**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}, "send", "  ")
    assert empty.returncode == 1 and "empty" in empty.stderr


def test_maintenance_cli(cli_env: dict[str, str]) -> None:
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}
    dry = _cli(env, "maintenance", "run", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["dry_run"] is True
    out = _cli(env, "maintenance", "run")
    assert out.returncode == 0 and "prune_checkpoints" in out.stdout
    status = json.loads(_cli(env, "status", "--json").stdout)  # exits 1: no daemon
    assert status["last_maintenance"] is not None  # the run is recorded


async def test_the_heartbeat_beats_and_with_an_llm_works_its_instructions(
    settings: Settings, client: Redis
) -> None:
    from aether.identity.flags import HeartbeatState

    quiet = await _daemon(settings, client, None)
    await quiet.heartbeat()
    state = await HeartbeatState(client, quiet.keys).get()
    assert state.beats == 1 and state.last_check == "inbox"
    assert await client.exists(quiet.keys.chat_messages("heartbeat")) == 0  # paused: no LLM
    with ScriptedOpenAI(responder=lambda body: completion("checked the inbox; all quiet")) as srv:
        llm = LLMClient(srv.base_url, "scripted", max_retries=0)
        daemon = await _daemon(settings, client, llm)
        await daemon.heartbeat()
        [request] = srv.chat_requests()
        assert "Heartbeat tick" in request["messages"][-1]["content"]
        assert "tasks" in request["messages"][-1]["content"]  # the rotation's second check
        assert "# Heartbeat" in request["messages"][0]["content"]  # the identity's instructions
        srv.failing = True
        await daemon.heartbeat()
        await llm.aclose()
    state = await HeartbeatState(client, daemon.keys).get()
    assert state.beats == 3 and "heartbeat failed" in state.alerts[-1]["message"]
