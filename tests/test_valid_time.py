"""Valid time: what was true at a time, told apart from what was recorded then."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from redis.asyncio import Redis

from aether.config import Settings
from aether.memory.knowledge.valid_time import holds_at, valid_time
from aether.operations import REGISTRY, Caller, Parts
from aether.operations import beliefs as _beliefs  # noqa: F401  (registers the groups)
from aether.operations import memory as _memory  # noqa: F401
from tests.conftest import invoke_cli


def _at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _day(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).date().isoformat()


THURSDAY = _at("2026-05-14T15:00")


@pytest.mark.parametrize(
    ("statement", "start", "end"),
    [
        ("Nadia has led the Faro team since April 2025", "2025-04-01", None),
        ("since 2023 the backups run nightly", "2023-01-01", None),
        ("as of June the on-call rota is weekly", "2025-06-01", None),  # June not yet: last June
        ("as of May the on-call rota is weekly", "2026-05-01", None),  # this month
        ("the build bot is paused until Saturday", None, "2026-05-17"),
        ("the build bot is paused until Thursday", None, "2026-05-15"),  # today included
        ("the parking code is 4411 until the end of July", None, "2026-08-01"),
        ("the parking code is 4411 until February", None, "2027-03-01"),  # next February
        ("from 2 March to 9 March the lab is closed", "2026-03-02", "2026-03-10"),
        ("from March 2, 2025 until Dec 31, 2025 Rui was the lead", "2025-03-02", "2026-01-01"),
        ("starting 2026-06-01 invoices go to billing@acme.test", "2026-06-01", None),
        ("effective today the quota is 5 GB", "2026-05-14", None),
        ("since last Monday the cache is warm", "2026-05-11", None),
        ("Rui is away through tomorrow", None, "2026-05-16"),
        # no valid time: no cue, a cue without a date, a number that is not a date
        ("the NAS holds 16 TB", None, None),
        ("since I moved, I cycle to work", None, None),
        ("I bought 3 items since", None, None),
        ("a report from 2024 says so", None, None),
        ("since February 30 nothing works", None, None),
        ("until 2020 since 2024", "2024-01-01", None),  # an end before the start is dropped
    ],
)
def test_a_statement_s_valid_time_is_read_relative_to_its_recording(
    statement: str, start: str | None, end: str | None
) -> None:
    said = valid_time(statement, THURSDAY)
    assert (_day(said.start), _day(said.end)) == (start, end)


def test_a_belief_holds_from_its_start_until_its_end_or_its_successor() -> None:
    recorded = _at("2026-01-10T00:00")
    old = {"id": "a", "timestamp": recorded, "superseded_by": "b"}
    new = {"id": "b", "timestamp": _at("2026-05-01T00:00"), "valid_from": _at("2026-03-01")}
    closed = {"id": "c", "timestamp": recorded, "valid_until": _at("2026-02-01T00:00")}
    every = [old, new, closed]
    ids = lambda when: [b["id"] for b in holds_at(every, _at(when))]  # noqa: E731
    assert ids("2026-01-05T00:00") == []  # before anything was recorded or stated
    assert ids("2026-01-20T00:00") == ["a", "c"]
    assert ids("2026-02-15T00:00") == ["a"]  # c's stated end passed
    assert ids("2026-03-02T00:00") == ["b"]  # b's stated start ends a, before b was recorded
    assert ids("2027-01-01T00:00") == ["b"]


def _parts(settings: Settings, client: Redis) -> Parts:
    ns = f"valid{uuid.uuid4().hex[:8]}"
    return Parts(
        settings.model_copy(update={"namespace": ns, "embedding": {"provider": "none"}}), client
    )


async def _op(parts: Parts, name: str, clock: float, **args: Any) -> Any:
    caller = Caller("test", clock=lambda: clock)
    return REGISTRY[name].dump(await REGISTRY[name].invoke(parts, caller, args))


async def _true_at(parts: Parts, when: str, now: float, **args: Any) -> list[str]:
    found = await _op(parts, "belief_list", now, valid_at=_at(when), **args)
    return sorted(b["content"] for b in found["beliefs"])


async def test_belief_list_valid_at_answers_what_was_true_then(
    settings: Settings, client: Redis
) -> None:
    parts = _parts(settings, client)
    await parts.ready()
    may = _at("2026-05-14T15:00")
    await _op(parts, "memory_remember", _at("2026-01-05T09:00"), content="I live in Porto")
    moved = await _op(parts, "memory_remember", may, content="Since March 2026 I live in Lisbon")
    assert [o["action"] for o in moved["beliefs"]] == ["superseded"]
    await _op(parts, "memory_remember", may, content="The Faro office is closed until Friday")
    now = _at("2026-06-01T00:00")
    assert await _true_at(parts, "2025-12-01T00:00", now) == []  # nothing was known true
    assert await _true_at(parts, "2026-02-01T00:00", now) == ["I live in Porto"]
    # Lisbon from March (what the statement says), not from May (when it was recorded)
    assert await _true_at(parts, "2026-04-01T00:00", now) == ["Since March 2026 I live in Lisbon"]
    assert await _true_at(parts, "2026-05-15T12:00", now) == [
        "Since March 2026 I live in Lisbon",
        "The Faro office is closed until Friday",
    ]
    assert await _true_at(parts, "2026-05-16T00:00", now) == ["Since March 2026 I live in Lisbon"]
    # the status narrows: of what was true in February, what has been superseded since
    assert await _true_at(parts, "2026-02-01T00:00", now, status="superseded") == [
        "I live in Porto"
    ]
    listed = await _op(parts, "belief_list", now)
    lisbon = next(b for b in listed["beliefs"] if "Lisbon" in b["content"])
    assert _day(lisbon["valid_from"]) == "2026-03-01" and "valid_until" not in lisbon


def _contents(found: str) -> list[str]:
    return sorted(b["content"] for b in json.loads(found))


def test_the_cli_answers_valid_at_beside_as_of(cli_env: dict[str, str]) -> None:
    """Recorded time and valid time apart: as recorded before the move, Lisbon was unknown."""
    listed = ("belief", "list", "--json", "--valid-at")
    assert invoke_cli(cli_env, "remember", "I live in Porto").returncode == 0
    head = json.loads(invoke_cli(cli_env, "journal", "verify", "--json").stdout)["head"]
    between = datetime.fromtimestamp(int(head.split("-")[0]) / 1000, tz=UTC) + timedelta(
        milliseconds=1
    )
    moved = invoke_cli(cli_env, "remember", "Since March 2026 I live in Lisbon")
    assert moved.returncode == 0, moved.stdout
    now = datetime.now(UTC).isoformat()
    assert _contents(invoke_cli(cli_env, *listed, now).stdout) == [
        "Since March 2026 I live in Lisbon"
    ]
    assert _contents(invoke_cli(cli_env, *listed, "2026-04-01").stdout) == [
        "Since March 2026 I live in Lisbon"
    ]
    assert _contents(invoke_cli(cli_env, *listed, "2026-02-01").stdout) == []
    as_recorded = invoke_cli(
        cli_env, *listed, now, "--as-of", between.isoformat(timespec="milliseconds")
    )
    assert _contents(as_recorded.stdout) == ["I live in Porto"]
    table = invoke_cli(cli_env, "belief", "list", "--status", "all")
    assert "from 2026-03-01" in table.stdout  # the valid column
    for bad in ("next blue moon", "2026-13-01"):
        refused = invoke_cli(cli_env, "belief", "list", "--valid-at", bad)
        assert refused.returncode == 64 and "valid-at" in refused.stdout + refused.stderr


async def test_a_time_in_one_clause_stays_with_its_clause(
    settings: Settings, client: Redis
) -> None:
    parts = _parts(settings, client)
    await parts.ready()
    said = "I moved to Lisbon and since May 2026 I work at Acme"
    await _op(parts, "memory_remember", THURSDAY, content=said)
    listed = (await _op(parts, "belief_list", THURSDAY))["beliefs"]
    windows = {b["content"]: _day(b.get("valid_from")) for b in listed}
    assert windows == {"I moved to Lisbon": None, "since May 2026 I work at Acme": "2026-05-01"}
