"""Compound sentences make one belief per clause, without an LLM (greetings dropped, a
place verb never relates a person to a thing), and each clause supersedes on its own."""

from __future__ import annotations

import asyncio
import json

import pytest

from aether.memory.knowledge.extraction import clauses, extract
from tests.conftest import run_cli

COMPOUND = [
    ("Hello there, I live in Porto and my NAS has 16 TB", ["I live in Porto", "my NAS has 16 TB"]),
    ("I live in Lisbon.", ["I live in Lisbon."]),
    (
        "I like tea; my sister Maria lives in Berlin",
        ["I like tea", "my sister Maria lives in Berlin"],
    ),
    (
        "My car is a Corolla, but my wife drives a Tesla",
        ["My car is a Corolla", "my wife drives a Tesla"],
    ),
    ("Hi! I moved to Madrid.", ["I moved to Madrid."]),
    ("Hey, I work at Acme and I love it", ["I work at Acme", "I love it"]),
    ("Thanks, my dog is called Rex", ["my dog is called Rex"]),
    ("So, I bought a Pixel and my old phone broke", ["I bought a Pixel", "my old phone broke"]),
    (
        "Good morning! We visited Rome and they loved the food",
        ["We visited Rome", "they loved the food"],
    ),
    ("I have 2 kids and my partner is Sam", ["I have 2 kids", "my partner is Sam"]),
    (
        "Oh, the NAS has 12 TB; the router is a Fritzbox",
        ["the NAS has 12 TB", "the router is a Fritzbox"],
    ),
    ("I run every morning, I swim on Sundays", ["I run every morning", "I swim on Sundays"]),
    ("bread and butter is my breakfast", ["bread and butter is my breakfast"]),
    ("Tom and Jerry live in Paris", ["Tom and Jerry live in Paris"]),
    ("I studied physics and chemistry", ["I studied physics and chemistry"]),
    (
        "My brother lives in Oslo while my sister lives in Rome",
        ["My brother lives in Oslo", "my sister lives in Rome"],
    ),
    ("Well, I think so", ["I think so"]),
    ("Hello there", []),
    ("Thanks!", []),
    ("By the way, my office moved to Floor 3", ["my office moved to Floor 3"]),
    ("I drive a Volvo and she drives a Mini", ["I drive a Volvo", "she drives a Mini"]),
    ("We met in 2019 and we married in 2021", ["We met in 2019", "we married in 2021"]),
    ("Anyway, I joined Google; I left Meta", ["I joined Google", "I left Meta"]),
    ("I love pizza but I hate olives", ["I love pizza", "I hate olives"]),
    ("Yo, it works now", ["it works now"]),
    (
        "My laptop has 16 GB and my desktop has 64 GB",
        ["My laptop has 16 GB", "my desktop has 64 GB"],
    ),
    (
        "I'm in Berlin and I'm flying to Tokyo tomorrow",
        ["I'm in Berlin", "I'm flying to Tokyo tomorrow"],
    ),
    (
        "Caroline went to the support group and she loved it",
        ["Caroline went to the support group", "she loved it"],
    ),
    (
        "The meeting is on Monday, and the demo is on Friday",
        ["The meeting is on Monday", "the demo is on Friday"],
    ),
    ("Fyi my number changed; call me later", ["my number changed", "call me later"]),
    ("Sophie lives in Ohio", ["Sophie lives in Ohio"]),  # fillers are whole words only
    ("you know Wellington is windy", ["you know Wellington is windy"]),
    ("His boat is red and Hiroshi owns it", ["His boat is red and Hiroshi owns it"]),
]


@pytest.mark.parametrize(("text", "expected"), COMPOUND, ids=[t[:40] for t, _ in COMPOUND])
def test_a_compound_sentence_is_cut_into_its_clauses(text: str, expected: list[str]) -> None:
    assert clauses(text) == expected


def test_a_person_never_lives_in_a_thing() -> None:
    found = extract("User", "Hello there, I live in Porto and my NAS has 16 TB")
    assert [f.statement for f in found.facts] == ["User lives in Porto", "User's NAS has 16 TB"]
    relations = {(r.source, r.type, r.target) for r in found.relations}
    assert ("User", "live_in", "Porto") in relations
    assert not any(r.target == "NAS" and r.type == "live_in" for r in found.relations)
    assert not any("hello" in e.name.lower() for e in found.entities)


async def test_each_clause_goes_through_the_lifecycle_on_its_own(cli_env: dict[str, str]) -> None:
    env = {**cli_env, "AETHER_EMBEDDING__PROVIDER": "none"}  # no LLM either: the deterministic path

    async def cli(*args: str) -> str:
        done = await asyncio.to_thread(run_cli, env, *args)
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    await cli("remember", "I live in Lisbon.")
    await cli("remember", "My NAS has 12 TB.")
    told = json.loads(
        await cli("remember", "Hello there, I live in Porto and my NAS has 16 TB", "--json")
    )
    assert [b["action"] for b in told["beliefs"]] == ["superseded", "superseded"]
    active = json.loads(await cli("belief", "list", "--json"))
    said = " | ".join(str(b) for b in active)
    assert "Porto" in said and "16 TB" in said
    assert "Lisbon" not in said and "12 TB" not in said and "Hello" not in said
