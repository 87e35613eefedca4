"""PostgreSQL schema of the archive, applied in order, each once, under an advisory lock."""

from __future__ import annotations

import asyncpg

# (version, statements); append new migrations, never edit applied ones.
MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
        CREATE TABLE aether_journal (
            ns      text   NOT NULL,
            ms      bigint NOT NULL,
            seq     bigint NOT NULL,
            actor   text   NOT NULL,
            reason  text   NOT NULL,
            fields  bytea  NOT NULL,
            PRIMARY KEY (ns, ms, seq)
        );
        CREATE TABLE aether_snapshots (
            ns          text   NOT NULL,
            snapshot_id text   NOT NULL,
            ms          bigint NOT NULL,
            seq         bigint NOT NULL,
            key_count   integer NOT NULL,
            created_at  timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (ns, snapshot_id)
        );
        CREATE INDEX aether_snapshots_pos ON aether_snapshots (ns, ms, seq);
        CREATE TABLE aether_snapshot_keys (
            ns          text  NOT NULL,
            snapshot_id text  NOT NULL,
            key         bytea NOT NULL,
            dump        bytea NOT NULL,
            PRIMARY KEY (ns, snapshot_id, key),
            FOREIGN KEY (ns, snapshot_id) REFERENCES aether_snapshots ON DELETE CASCADE
        );
        CREATE TABLE aether_checkpoints (
            ns         text   NOT NULL,
            id         text   NOT NULL,
            created_at bigint NOT NULL,
            label      text   NOT NULL,
            reason     text   NOT NULL,
            actor      text   NOT NULL,
            ms         bigint NOT NULL,
            seq        bigint NOT NULL,
            PRIMARY KEY (ns, id)
        );
        """,
    ),
    (
        2,
        """
        -- snapshots are taken page by page: replay starts after (start_ms, start_seq), and
        -- each key's DUMP holds its state at its own position (NULL: the snapshot's)
        ALTER TABLE aether_snapshots ADD COLUMN start_ms bigint, ADD COLUMN start_seq bigint;
        ALTER TABLE aether_snapshot_keys ADD COLUMN ms bigint, ADD COLUMN seq bigint;
        """,
    ),
    (
        3,
        """
        -- an entry written while no archive followed keeps only its keys (no values):
        -- a restore never replays across one
        ALTER TABLE aether_journal ADD COLUMN replayable boolean NOT NULL DEFAULT true;
        """,
    ),
)

_LOCK_ID = 0x6165746865720001  # "aether" + 1: serialises concurrent migrators


async def migrate(conn: asyncpg.Connection) -> list[int]:
    """Apply the migrations not applied yet; returns their versions."""
    applied: list[int] = []
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_ID)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS aether_schema_migrations ("
            " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {
            r["version"] for r in await conn.fetch("SELECT version FROM aether_schema_migrations")
        }
        for version, sql in MIGRATIONS:
            if version in done:
                continue
            await conn.execute(sql)
            await conn.execute(
                "INSERT INTO aether_schema_migrations (version) VALUES ($1)", version
            )
            applied.append(version)
    return applied
