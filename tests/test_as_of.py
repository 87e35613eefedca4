"""As of: the state as recorded at a past time, read from the journal, the live state untouched."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from aether.checkpoints.chain import GENESIS
from aether.config import Settings
from aether.errors import CheckpointError
from aether.operations import REGISTRY, Caller, Parts
from aether.operations import beliefs as _beliefs  # noqa: F401  (registers the groups)
from aether.operations import graph as _graph  # noqa: F401
from aether.operations import identity as _identity  # noqa: F401
from aether.operations import memory as _memory  # noqa: F401
from aether.testing.image import state_image
from tests.conftest import invoke_cli

CITIES = ["Lisbon", "Porto", "Faro", "Braga"]
STEP = st.one_of(
    st.tuples(st.just("log"), st.sampled_from(CITIES)),
    st.tuples(st.just("move"), st.sampled_from(CITIES)),
    st.tuples(st.just("forget"), st.sampled_from(CITIES)),
)


def _parts(settings: Settings, client: Redis) -> Parts:
    ns = f"asof{uuid.uuid4().hex[:8]}"
    return Parts(
        settings.model_copy(update={"namespace": ns, "embedding": {"provider": "none"}}), client
    )


async def _op(parts: Parts, name: str, clock: float | None = None, **args: Any) -> Any:
    caller = Caller("test") if clock is None else Caller("test", clock=lambda: clock)
    return REGISTRY[name].dump(await REGISTRY[name].invoke(parts, caller, args))


async def _step(parts: Parts, step: tuple[str, str]) -> None:
    kind, city = step
    if kind == "log":
        await _op(parts, "memory_log", content=f"visited {city} for the {city} office")
    elif kind == "move":
        await _op(parts, "memory_replace", target="where I live", content=f"I live in {city} now")
    else:
        await _op(parts, "memory_forget", about=city)


async def _reads(parts: Parts, as_of: float | None = None, clock: float | None = None) -> Any:
    """What the five as-of reads answer (the memories' keys without their namespace)."""
    when: dict[str, Any] = {"as_of": as_of} if as_of is not None else {"clock": clock}
    beliefs = await _op(parts, "belief_list", status="all", **when)
    listed = sorted((b["id"], b["content"], b["status"]) for b in beliefs["beliefs"])
    shown = [
        (await _op(parts, "belief_show", id=b_id, **when))["belief"]["content"]
        for b_id, _, _ in listed
    ]
    searched = await _op(parts, "memory_search", query="office live", limit=10, **when)
    context = await _op(parts, "context_assemble", query="where do I live", **when)
    expanded = await _op(parts, "graph_expand", query="Lisbon", **when)
    return {
        "beliefs": listed,
        "shown": shown,
        "search": sorted(h["id"] for h in searched["results"]),
        "context": sorted(m["key"].split(":", 1)[1] for m in context["memories"]),
        "graph": sorted(json.dumps(r, sort_keys=True) for r in expanded["relations"]),
    }


async def _head_ms(client: Redis, parts: Parts) -> int:
    last = await client.xrevrange(parts.keys.journal(), count=1)
    return int(last[0][0].decode().split("-")[0]) if last else 0


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(history=st.lists(STEP, min_size=2, max_size=6), pick=st.integers(0, 5))
def test_as_of_answers_what_a_rollback_to_that_time_shows(
    settings: Settings, history: list[tuple[str, str]], pick: int
) -> None:
    asyncio.run(_as_of_equals_rollback(settings, history, pick))


async def _as_of_equals_rollback(
    settings: Settings, history: list[tuple[str, str]], pick: int
) -> None:
    from aether.store.client import connect

    client = await connect(settings)
    try:
        parts = _parts(settings, client)
        await parts.ready()
        marks: list[tuple[int, str]] = []  # (the step's last entry's ms, a checkpoint after it)
        for step in history:
            await _step(parts, step)
            checkpoint = await parts.checkpoints.create(label="after a step")
            marks.append((await _head_ms(client, parts), checkpoint.id))
        at_ms = marks[pick % len(marks)][0]
        # a later step in the same millisecond is part of the state at that time
        expected_cp = [cp for ms, cp in marks if ms <= at_ms][-1]
        before = await state_image(client, parts.keys)
        moment = at_ms / 1000 + 0.0009
        past = await _reads(parts, as_of=moment)
        assert await state_image(client, parts.keys) == before  # the live state untouched
        assert [k async for k in client.scan_iter(match=f"{parts.keys.ns}.asof.*")] == []
        await parts.checkpoints.rollback_to(expected_cp)
        assert await _reads(parts, clock=moment) == past
        await parts.checkpoints.undo()
    finally:
        await client.aclose()


async def test_as_of_before_the_first_entry_is_empty_and_the_future_is_refused(
    settings: Settings, client: Redis
) -> None:
    parts = _parts(settings, client)
    await parts.ready()
    await _step(parts, ("move", "Porto"))
    first_ms = await _head_ms(client, parts)
    empty = await _op(parts, "belief_list", status="all", as_of=first_ms / 1000 - 5)
    assert empty["beliefs"] == []
    with pytest.raises(CheckpointError, match="future"):
        await _op(parts, "belief_list", as_of=first_ms / 1000 + 3600)
    with pytest.raises(Exception, match="as_of"):
        await _op(parts, "belief_list", as_of="yesterday")


async def test_as_of_before_trimmed_history_is_refused(settings: Settings, client: Redis) -> None:
    parts = _parts(settings, client)
    await parts.ready()
    await _step(parts, ("move", "Porto"))
    early_ms = await _head_ms(client, parts)
    await parts.checkpoints.create()
    await asyncio.sleep(0.01)  # the next entries in later milliseconds than the first
    for city in ("Faro", "Braga"):
        await _step(parts, ("move", city))
        await parts.checkpoints.create()
    await parts.checkpoints.prune(keep=1)
    with pytest.raises(CheckpointError, match="trimmed"):
        await _op(parts, "belief_list", as_of=early_ms / 1000 - 0.5)
    now = await _op(parts, "belief_list", as_of=await _head_ms(client, parts) / 1000 + 0.0009)
    assert [b["content"] for b in now["beliefs"]] == ["I live in Braga now"]


async def test_history_before_the_first_checkpoint_outlives_rollbacks(
    settings: Settings, client: Redis
) -> None:
    """Until retention prunes a checkpoint the journal keeps the namespace's first changes:
    a rollback, or a prune with nothing to prune, no longer trims them, so "as of" answers
    for a moment before the first checkpoint, and before the first change with nothing."""
    parts = _parts(settings, client)
    await parts.ready()
    await _op(parts, "memory_log", content="visited Lisbon for the Lisbon office")
    first_ms = int((await client.xrange(parts.keys.journal(), count=1))[0][0].split(b"-")[0])
    early_ms = await _head_ms(client, parts)
    await asyncio.sleep(0.01)
    await _op(parts, "memory_log", content="visited Porto for the Porto office")
    checkpoint = await parts.checkpoints.create(label="first")
    await _op(parts, "memory_log", content="visited Faro for the Faro office")
    await parts.checkpoints.rollback_to(checkpoint.id)
    assert await parts.checkpoints.prune() == []
    oldest = (await client.xrange(parts.keys.journal(), count=1))[0]
    assert oldest[1][b"p"] == GENESIS.encode()  # the journal still starts at its genesis
    then = await _op(
        parts, "memory_search", query="office", limit=5, as_of=early_ms / 1000 + 0.0009
    )
    assert [h["content"] for h in then["results"]] == ["visited Lisbon for the Lisbon office"]
    before = await _op(parts, "memory_search", query="office", as_of=first_ms / 1000 - 1)
    assert before["results"] == []
    await parts.checkpoints.prune(keep=1)  # retention gives up a checkpoint: now it trims
    with pytest.raises(CheckpointError, match="trimmed"):
        await _op(parts, "memory_search", query="office", as_of=early_ms / 1000 + 0.0009)


def test_the_cli_answers_as_of_a_time(cli_env: dict[str, str]) -> None:
    replace = ("memory", "replace", "where I live")
    assert invoke_cli(cli_env, *replace, "I live in Lisbon now", "--yes").returncode == 0
    head = json.loads(invoke_cli(cli_env, "journal", "verify", "--json").stdout)["head"]
    recorded = int(head.split("-")[0]) / 1000  # the journal's time of the Lisbon belief
    assert invoke_cli(cli_env, *replace, "I live in Faro now", "--yes").returncode == 0
    moment = datetime.fromtimestamp(recorded, tz=UTC) + timedelta(milliseconds=1)
    when = moment.isoformat(timespec="milliseconds")
    then = json.loads(invoke_cli(cli_env, "belief", "list", "--as-of", when, "--json").stdout)
    assert [b["content"] for b in then] == ["I live in Lisbon now"]
    now = json.loads(invoke_cli(cli_env, "belief", "list", "--json").stdout)
    assert [b["content"] for b in now] == ["I live in Faro now"]
    bad = invoke_cli(cli_env, "memory", "search", "live", "--as-of", "not a time")
    assert bad.returncode == 64


async def test_as_of_before_an_erasure_does_not_bring_the_text_back(
    settings: Settings, client: Redis
) -> None:
    parts = _parts(settings, client)
    await parts.ready()
    secret = f"Quarzvelt-{uuid.uuid4().hex[:8]}"
    await _op(parts, "memory_log", content=f"the badge code of {secret} is 4471")
    await _op(parts, "memory_log", content="the lobby opens at eight")
    before = await _head_ms(client, parts) / 1000 + 0.0009
    assert (await _op(parts, "memory_search", query=secret, as_of=before))["results"]
    await parts.eraser("operator").erase(secret)
    then = await _op(parts, "memory_search", query="badge code lobby", limit=10, as_of=before)
    assert secret not in json.dumps(then)  # history was redacted: the past holds no copy
    assert [h["content"] for h in then["results"]] == ["the lobby opens at eight"]
