"""The checkpoint and archive commands, as a person runs them."""

from __future__ import annotations

import asyncio
import json
from datetime import date

from aether.config import Settings
from aether.keys import Keyspace
from aether.store.client import connect
from aether.store.state import Mutation, Store
from tests.conftest import PG_DSN, invoke_cli
from tests.conftest import run_cli as _aether


def _write(settings: Settings, eid: str) -> None:
    async def go() -> None:
        keys = Keyspace(settings.namespace)
        client = await connect(settings)
        try:
            await Store(client, keys).apply(
                Mutation()
                .json_set(keys.daily_entry(eid), {"content": eid})
                .rpush(keys.daily(date(2026, 1, 1)), eid),
                "memory.log",
            )
        finally:
            await client.aclose()

    asyncio.run(go())


def _exists(settings: Settings, key: str) -> bool:
    async def go() -> bool:
        client = await connect(settings)
        try:
            return bool(await client.exists(key))
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_checkpoint_workflow(cli_env: dict[str, str], settings: Settings, keys: Keyspace) -> None:
    assert invoke_cli(cli_env, "checkpoint", "list").returncode == 2  # none yet
    _write(settings, "e1")
    made = invoke_cli(cli_env, "checkpoint", "create", "--label", "first")
    assert made.returncode == 0, made.stderr
    cp_id = made.stdout.strip()
    listed = json.loads(invoke_cli(cli_env, "checkpoint", "list", "--json").stdout)
    assert [c["id"] for c in listed] == [cp_id] and listed[0]["label"] == "first"

    _write(settings, "e2")
    shown = json.loads(invoke_cli(cli_env, "--json", "checkpoint", "show", cp_id[:8]).stdout)
    assert shown["entries_since"] == 1
    diff = json.loads(invoke_cli(cli_env, "checkpoint", "diff", cp_id[:8], "--json").stdout)
    assert diff["tiers"]["daily"]["created"] == [keys.daily_entry("e2")]
    human = invoke_cli(cli_env, "checkpoint", "diff", cp_id[:8]).stdout
    assert f"+ {keys.daily_entry('e2')}" in human

    refused = invoke_cli(cli_env, "checkpoint", "rollback", cp_id)  # no TTY, no --yes
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert _exists(settings, keys.daily_entry("e2"))

    done = invoke_cli(cli_env, "checkpoint", "rollback", cp_id[: 6 + 4], "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["entries_undone"] == 1
    assert not _exists(settings, keys.daily_entry("e2"))
    assert invoke_cli(cli_env, "checkpoint", "undo").returncode == 0
    assert _exists(settings, keys.daily_entry("e2"))


def test_checkpoint_errors_are_one_line(cli_env: dict[str, str]) -> None:
    for args in (
        ("checkpoint", "show", "abc"),
        ("checkpoint", "rollback", "ZZZZZZZZ", "--yes"),
        ("checkpoint", "undo"),
        ("checkpoint", "diff", "'; DROP x"),
    ):
        out = invoke_cli(cli_env, *args)
        assert out.returncode == 1, (args, out)
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    as_json = invoke_cli(cli_env, "--json", "checkpoint", "show", "ZZZZZZZZ")
    assert as_json.returncode == 1 and "error" in json.loads(as_json.stdout)


def test_prune_command(cli_env: dict[str, str], settings: Settings) -> None:
    for _ in range(4):
        assert invoke_cli(cli_env, "checkpoint", "create").returncode == 0
    out = json.loads(invoke_cli(cli_env, "checkpoint", "prune", "--keep", "2", "--json").stdout)
    assert len(out["pruned"]) == 2
    assert len(json.loads(invoke_cli(cli_env, "checkpoint", "list", "--json").stdout)) == 2


def test_archive_commands(cli_env: dict[str, str], settings: Settings) -> None:
    no_dsn = invoke_cli(cli_env, "archive", "sync")
    assert no_dsn.returncode == 1 and "AETHER_POSTGRES_DSN" in no_dsn.stderr
    env = {**cli_env, "AETHER_POSTGRES_DSN": PG_DSN}
    _write(settings, "e1")
    cp_id = invoke_cli(env, "checkpoint", "create").stdout.strip()
    synced = invoke_cli(env, "archive", "sync", "--json")
    assert synced.returncode == 0, synced.stderr
    assert json.loads(synced.stdout)["checkpoints"] == 1
    snap = invoke_cli(env, "archive", "snapshot", "--json")
    assert snap.returncode == 0 and json.loads(snap.stdout)["snapshot"]
    # restoring over a live namespace is refused and changes nothing
    refused = invoke_cli(env, "archive", "restore", "--to", cp_id)
    assert refused.returncode == 1 and "not empty" in refused.stderr
    other = {**env, "AETHER_NAMESPACE": settings.namespace + "x"}
    missing = invoke_cli(other, "archive", "restore", "--to", cp_id)
    assert missing.returncode == 1 and "no archived checkpoint" in missing.stderr


def test_diff_shows_sorted_set_scores_exactly(
    cli_env: dict[str, str], settings: Settings, keys: Keyspace
) -> None:
    counts = keys.prefix + "memory:counts"

    def scores(mapping: dict[str, float]) -> None:
        async def go() -> None:
            client = await connect(settings)
            try:
                await Store(client, keys).apply(Mutation().zadd(counts, mapping), "counts")
            finally:
                await client.aclose()

        asyncio.run(go())

    scores({"daily": 1795552110.25})
    cp_id = _aether(cli_env, "checkpoint", "create").stdout.strip()
    scores({"daily": 1795552110.75})
    shown = _aether(cli_env, "checkpoint", "diff", cp_id)
    assert shown.returncode == 0, shown.stderr
    assert "daily: 1795552110.25 → 1795552110.75" in shown.stdout  # not 1.79555e+09 twice
