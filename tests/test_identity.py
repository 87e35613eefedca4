"""Identity layer: markdown bootstrap, Redis-only later boots, profiles, prompt, flags."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.errors import IdentityError
from aether.identity.bootstrap import default_identity_dir
from aether.identity.flags import HeartbeatState
from aether.identity.profile import IdentityStore
from aether.identity.prompt import build_system_prompt
from aether.keys import Keyspace
from aether.store.client import connect
from aether.store.state import Store
from tests.conftest import dump_state, invoke_cli, next_event, run_cli

NOW = datetime(2026, 11, 22, 15, 4, 5, tzinfo=UTC)


@pytest.fixture
def identity_dir(tmp_path: Path) -> Path:
    target = tmp_path / "identity"
    shutil.copytree(default_identity_dir(), target)
    return target


@pytest.fixture
def identities(store: Store, checkpoints: Checkpoints) -> IdentityStore:
    return IdentityStore(store, checkpoints)


async def test_bootstrap_writes_files_profiles_and_flag(
    identities: IdentityStore, client: Redis, keys: Keyspace, identity_dir: Path
) -> None:
    result = await identities.bootstrap(identity_dir)
    assert result.files == ["AETHER_ESSENCE.md", "Core_Self.md", "USER.md"]
    profile = await client.hgetall(keys.identity_profile())
    assert profile[b"name"] == b"Aether" and profile[b"autonomy_mode"] == b"supervised"
    assert b"created_at" in profile and b"updated_at" in profile
    user = await client.hgetall(keys.user_profile())
    assert user[b"name"] == b"Operator" and user[b"timezone"] == b"UTC"
    files = await client.hgetall(keys.identity_files())
    assert set(files) == {b"AETHER_ESSENCE.md", b"Core_Self.md", b"USER.md"}
    assert files[b"Core_Self.md"] == (identity_dir / "Core_Self.md").read_bytes()
    assert await client.hget(keys.system_flags(), "bootstrapped") == b"1"


async def test_second_boot_reads_redis_only(
    settings: Settings, keys: Keyspace, identity_dir: Path
) -> None:
    (identity_dir / "USER.md").write_text("---\nname: Grace\ntimezone: Europe/Paris\n---\nHi\n")
    client = await connect(settings)
    try:
        await IdentityStore(Store(client, keys), Checkpoints(client, keys)).ensure(identity_dir)
    finally:
        await client.aclose()
    shutil.rmtree(identity_dir)  # the filesystem is gone: the next boot must not need it
    client = await connect(settings)  # a new process would open a new connection
    try:
        identity = await IdentityStore(Store(client, keys), Checkpoints(client, keys)).ensure(
            identity_dir
        )
    finally:
        await client.aclose()
    prompt = build_system_prompt(identity, now=NOW).text
    assert "You are Aether" in prompt
    assert "Name: Grace" in prompt
    assert "Never reveal secrets" in prompt
    assert "[Current Time: 2026-11-22 16:04:05] (Europe/Paris)" in prompt


async def test_existing_identity_is_never_overwritten_without_force(
    identities: IdentityStore, client: Redis, keys: Keyspace, identity_dir: Path, tmp_path: Path
) -> None:
    await identities.bootstrap(identity_dir)
    other = tmp_path / "other"
    other.mkdir()
    (other / "AETHER_ESSENCE.md").write_text("---\nname: Impostor\n---\nbody\n")
    before = await dump_state(client, keys)
    with pytest.raises(IdentityError, match="--force"):
        await identities.bootstrap(other)
    assert await dump_state(client, keys) == before


async def test_force_replaces_after_a_checkpoint(
    identities: IdentityStore, client: Redis, keys: Keyspace, identity_dir: Path, tmp_path: Path
) -> None:
    await identities.bootstrap(identity_dir)
    before = await dump_state(client, keys)
    other = tmp_path / "other"
    other.mkdir()
    (other / "AETHER_ESSENCE.md").write_text("---\nname: Nova\n---\n## Guardrails\n- be kind\n")
    result = await identities.bootstrap(other, force=True)
    assert result.replaced and result.checkpoint
    profile = await client.hgetall(keys.identity_profile())
    assert profile[b"name"] == b"Nova" and b"voice_style" not in profile  # stale fields gone
    assert await client.hkeys(keys.identity_files()) == [b"AETHER_ESSENCE.md"]
    await identities.checkpoints.rollback_to(result.checkpoint)
    assert await dump_state(client, keys) == before


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("AETHER_ESSENCE.md", b"", "AETHER_ESSENCE.md: the file is empty"),
        ("AETHER_ESSENCE.md", b"   \n\n", "AETHER_ESSENCE.md: the file is empty"),
        ("Core_Self.md", b"---\nname: X\n\xff\xfe\n---\n", "Core_Self.md: not valid UTF-8"),
        ("AETHER_X.md", b"---\nname: X\nno colon here\n---\n", "AETHER_X.md: line 3"),
        ("AETHER_X.md", b"---\nname: X\n", "AETHER_X.md: front matter opened"),
        ("AETHER_X.md", b"---\nname: X\nname: Y\n---\n", "appears twice"),
        ("AETHER_X.md", b"---\nName Space: X\n---\n", "AETHER_X.md: line 2"),
        ("USER.md", b"", "USER.md: the file is empty"),
        ("AETHER_X.md", b"x" * (1024 * 1024 + 1), "AETHER_X.md: 1048577 bytes is over"),
        ("AETHER_X.md", b"---\nname: Other\n---\n", "AETHER_X.md: 'name' is 'Other'"),
    ],
)
async def test_bad_files_are_refused_and_nothing_is_written(
    identities: IdentityStore,
    client: Redis,
    keys: Keyspace,
    identity_dir: Path,
    name: str,
    content: bytes,
    message: str,
) -> None:
    (identity_dir / name).write_bytes(content)
    with pytest.raises(IdentityError, match=message.replace("'", ".").replace("(", r"\(")):
        await identities.bootstrap(identity_dir)
    assert await dump_state(client, keys) == {}
    assert await client.exists(keys.journal()) == 0


async def test_missing_directory_and_missing_name(
    identities: IdentityStore, client: Redis, keys: Keyspace, tmp_path: Path
) -> None:
    with pytest.raises(IdentityError, match="does not exist"):
        await identities.bootstrap(tmp_path / "nope")
    (tmp_path / "USER.md").write_text("---\nname: Op\n---\n")
    with pytest.raises(IdentityError, match="no AETHER"):
        await identities.bootstrap(tmp_path)
    (tmp_path / "Core_Self.md").write_text("---\nrole: x\n---\nbody\n")
    with pytest.raises(IdentityError, match="no 'name'"):
        await identities.bootstrap(tmp_path)
    assert await dump_state(client, keys) == {}


async def test_set_field_is_journaled_and_announced(
    identities: IdentityStore, client: Redis, keys: Keyspace, identity_dir: Path
) -> None:
    await identities.bootstrap(identity_dir)
    cp = await identities.checkpoints.create()
    pubsub = client.pubsub()
    await pubsub.subscribe(keys.events())
    await pubsub.get_message(timeout=1)
    await identities.set_field("user", "timezone", "Asia/Tokyo")
    await identities.set_field("agent", "voice_style", "terse")
    message = await next_event(pubsub)
    await pubsub.aclose()
    assert message is not None and json.loads(message["data"])["type"] == "identity.changed"
    assert await client.hget(keys.user_profile(), "timezone") == b"Asia/Tokyo"
    await identities.checkpoints.rollback_to(cp.id)
    assert await client.hget(keys.user_profile(), "timezone") == b"UTC"
    assert await client.hget(keys.identity_profile(), "voice_style") != b"terse"


async def test_set_field_bad_input(
    identities: IdentityStore, client: Redis, keys: Keyspace, identity_dir: Path
) -> None:
    with pytest.raises(IdentityError, match="no identity"):
        await identities.set_field("agent", "name", "X")
    await identities.bootstrap(identity_dir)
    before = await dump_state(client, keys)
    for target, field, value, message in [
        ("robot", "name", "X", "target"),
        ("agent", "Bad Field", "X", "identifier"),
        ("agent", "created_at", "X", "cannot be set"),
        ("agent", "name", "  ", "empty"),
        ("agent", "name", "x" * 70_000, "over"),
    ]:
        with pytest.raises(IdentityError, match=message):
            await identities.set_field(target, field, value)  # type: ignore[arg-type]
    assert await dump_state(client, keys) == before


async def test_prompt_budget_drops_least_important_never_guardrails(
    identities: IdentityStore, identity_dir: Path
) -> None:
    with (identity_dir / "USER.md").open("a") as f:
        f.write("\nI am on call every second weekend; page me only for outages.\n")
    await identities.bootstrap(identity_dir)
    identity = await identities.load()
    full = build_system_prompt(identity, now=NOW)
    assert full.dropped == [] and "heartbeat" in full.sections
    assert (
        "Name: Operator" in full.text and "[Current Time: 2026-11-22 15:04:05] (UTC)" in full.text
    )
    smaller = build_system_prompt(identity, max_tokens=full.tokens - 1, now=NOW)
    assert smaller.dropped == ["operator notes"] and smaller.tokens <= full.tokens - 1
    medium = build_system_prompt(identity, max_tokens=260, now=NOW)
    assert medium.tokens <= 260 and "guardrails" in medium.sections
    assert medium.dropped[:2] == ["operator notes", "heartbeat"]
    tiny = build_system_prompt(identity, max_tokens=10, now=NOW)
    assert tiny.sections == ["guardrails"] and tiny.over_budget
    assert "Never reveal secrets" in tiny.text


async def test_heartbeat_state(client: Redis, keys: Keyspace) -> None:
    heart = HeartbeatState(client, keys)
    checks = ["inbox", "tasks", "failures"]
    seen = [await heart.beat(checks, now=NOW) for _ in range(4)]
    assert seen == ["inbox", "tasks", "failures", "inbox"]
    for i in range(55):
        await heart.alert(f"alert {i}")
    snap = await heart.get()
    assert snap.beats == 4 and snap.last_beat == NOW and snap.last_check == "inbox"
    assert len(snap.alerts) == 50 and snap.alerts[-1]["message"] == "alert 54"
    assert await client.xlen(keys.journal()) == 0  # heartbeat is not journaled


def test_cli_identity(cli_env: dict[str, str], namespace: str, identity_dir: Path) -> None:
    assert invoke_cli(cli_env, "identity", "show").returncode == 1
    boot = invoke_cli(cli_env, "identity", "bootstrap", str(identity_dir))
    assert boot.returncode == 0, boot.stderr
    raw = run_cli(cli_env, "redis", "cli", "HGETALL", f"{namespace}:identity:profile").stdout
    assert "Aether" in raw.split() and "supervised" in raw.split()
    again = invoke_cli(cli_env, "identity", "bootstrap", str(identity_dir))
    assert again.returncode == 1 and "--force" in again.stderr
    assert invoke_cli(cli_env, "identity", "set", "user", "name", "Ada Lovelace").returncode == 0
    shown = json.loads(invoke_cli(cli_env, "identity", "show", "--json").stdout)
    assert shown["user"]["name"] == "Ada Lovelace" and shown["agent"]["name"] == "Aether"
    prompt = invoke_cli(cli_env, "identity", "prompt").stdout
    assert "Ada Lovelace" in prompt and "[Current Time: " in prompt and "Guardrails" in prompt
    limited = json.loads(
        invoke_cli(cli_env, "identity", "prompt", "--max-tokens", "200", "--json").stdout
    )
    assert limited["tokens"] <= 200 and "guardrails" in limited["sections"]
    bad = invoke_cli(cli_env, "identity", "set", "robot", "name", "x")
    assert bad.returncode == 1 and "target" in bad.stderr
    # a value is stored as it was validated: trailing whitespace does not hide the zone
    assert (
        invoke_cli(cli_env, "identity", "set", "user", "timezone", "Europe/Berlin ").returncode == 0
    )
    shown = json.loads(invoke_cli(cli_env, "identity", "show", "--json").stdout)
    assert shown["user"]["timezone"] == "Europe/Berlin"
    assert "Europe/Berlin" in invoke_cli(cli_env, "identity", "prompt").stdout
    assert "(UTC)" not in invoke_cli(cli_env, "identity", "prompt").stdout


def test_up_bootstraps_on_first_boot_and_stops_on_sigterm(
    cli_env: dict[str, str], settings: Settings, keys: Keyspace
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "aether", "up"],
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )

    async def bootstrapped() -> bool:
        client = await connect(settings)
        try:
            return await client.hget(keys.system_flags(), "bootstrapped") == b"1"
        finally:
            await client.aclose()

    deadline = time.monotonic() + 30
    while not asyncio.run(bootstrapped()):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0
