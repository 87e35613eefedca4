"""Adversarial CLI arguments: ranges, unknown ids, resource limits, search syntax, usage."""

from __future__ import annotations

import json

import pytest

from tests.adversarial.conftest import Agent

OUT_OF_RANGE = [
    ("graph", "expand", "kettle", "--depth", "0"),
    ("graph", "expand", "kettle", "--depth", "-1"),
    ("graph", "expand", "kettle", "--depth", "5"),
    ("graph", "expand", "kettle", "--depth", "1000000"),
    ("ledger", "list", "--limit", "-1"),
    ("ledger", "list", "--limit", "0"),
    ("ledger", "list", "--limit", "100001"),
    ("memory", "search", "kettle", "--limit", "0"),
    ("memory", "search", "kettle", "--limit", "-5"),
    ("memory", "search", "kettle", "--limit", "1001"),
    ("memory", "search", "kettle", "--limit", "99999999999999999999999"),
    ("memory", "scratch", "set", "p1", "v", "--ttl", "0"),
    ("memory", "scratch", "set", "p1", "v", "--ttl", "-1"),
    ("memory", "scratch", "set", "p1", "v", "--ttl", "9223372036854775808"),
    ("memory", "scratch", "set", "p1", "v", "--ttl", "315360001"),
    ("checkpoint", "prune", "--keep", "0"),
    ("checkpoint", "prune", "--keep", "-1"),
    ("checkpoint", "prune", "--keep", "100000000000000000000"),
    ("context", "preview", "kettle", "--max-tokens", "0"),
    ("context", "preview", "kettle", "--max-tokens", "-1"),
    ("context", "preview", "kettle", "--max-tokens", "10"),
    ("context", "preview", "kettle", "--max-tokens", "99999999999"),
    ("identity", "prompt", "--max-tokens", "0"),
    ("task", "add", "something", "--priority", "0"),
    ("task", "add", "something", "--priority", "6"),
    ("memory", "log", "x", "--score", "-0.1"),
    ("memory", "log", "x", "--score", "1.5"),
    ("memory", "log", "x", "--score", "nan"),
    ("memory", "log", "x", "--score", "inf"),
    ("memory", "longterm", "add", "x", "--score", "2"),
    ("belief", "prune", "--threshold", "-1"),
    ("belief", "prune", "--threshold", "2"),
    ("send", "hello", "--timeout", "0"),
    ("send", "hello", "--timeout", "-1"),
    ("tools", "show", "x", "--version", "0"),
    ("memory", "search", "kettle", "--limit", "ten"),
]


@pytest.mark.parametrize("args", OUT_OF_RANGE, ids=lambda a: " ".join(a))
def test_out_of_range_is_a_usage_error(seeded: Agent, args: tuple[str, ...]) -> None:
    out = seeded.refuses(*args, codes=(64,))
    assert "Invalid value" in out.text or "is not a valid" in out.text or "range" in out.text


BAD_VALUES = [
    ("memory", "search", "kettle", "--since", "99999999999d"),
    ("memory", "search", "kettle", "--since", "36601d"),
    ("memory", "search", "kettle", "--since", "banana"),
    ("memory", "search", "kettle", "--since", ""),
    ("memory", "search", "kettle", "--since", "-1d"),
    ("memory", "search", "kettle", "--kind", "gossip"),
    ("memory", "search", "kettle", "--source", "martian"),
    ("memory", "day", ""),
    ("memory", "day", "2024-13-99"),
    ("memory", "day", "yesterday"),
    ("memory", "log", ""),
    ("memory", "log", "   "),
    ("memory", "log", "x", "--source", "martian"),
    ("memory", "log", "x", "--session", "a b"),
    ("memory", "log", "x", "--session", "../../etc"),
    ("memory", "log", "x", "--tag", "bad\ntag"),
    ("memory", "log", "x", "--tag", "t" * 65),
    ("memory", "log", "x", *[a for i in range(33) for a in ("--tag", f"t{i}")]),
    ("memory", "longterm", "add", ""),
    ("memory", "scratch", "set", "bad id", "v"),
    ("memory", "scratch", "set", "x" * 200, "v"),
    ("task", "add", "x", "--due", "2024-02-30"),
    ("task", "add", ""),
    ("send", "   "),
    ("checkpoint", "create", "--label", "x" * 10_000),
    ("identity", "set", "agent", "name", ""),
    ("ledger", "list", "--since", "soon"),
]


@pytest.mark.parametrize("args", BAD_VALUES, ids=lambda a: " ".join(a)[:60])
def test_bad_value_is_refused(seeded: Agent, args: tuple[str, ...]) -> None:
    seeded.refuses(*args, codes=(1, 64))


def test_content_over_the_size_limit_is_refused(seeded: Agent) -> None:
    out = seeded.refuses("memory", "log", "x" * 2000, AETHER_MEMORY__MAX_CONTENT_BYTES="1024")
    assert "over the limit" in out.text


UNKNOWN_IDS = [
    ("checkpoint", "show", "01ZZZZZZZZ"),
    ("checkpoint", "show", "zz"),
    ("checkpoint", "diff", "01ZZZZZZZZ"),
    ("checkpoint", "rollback", "01ZZZZZZZZ", "--yes"),
    ("memory", "longterm", "delete", "01ZZZZZZZZZZZZZZZZZZZZZZZZ"),
    ("memory", "longterm", "delete", "../etc/passwd"),
    ("memory", "chat", "show", "no-such-session"),
    ("memory", "chat", "delete", "no-such-session", "--yes"),
    ("belief", "show", "ZZZZZZ"),
    ("belief", "forget", "ZZZZZZ"),
    ("task", "done", "ZZZZZZ"),
    ("tools", "show", "no-such-tool"),
    ("repo", "deps", "/no/such/file.py"),
    ("memory", "scratch", "get", "no-such-pad"),
    ("memory", "scratch", "delete", "no-such-pad"),
]


@pytest.mark.parametrize("args", UNKNOWN_IDS, ids=lambda a: " ".join(a)[:60])
def test_unknown_id_is_a_clear_error(seeded: Agent, args: tuple[str, ...]) -> None:
    seeded.refuses(*args, codes=(1, 2, 64))


SEARCH_SYNTAX = [
    "*",
    "**",
    "@content:(kettle)",
    "@id:{*}",
    '"',
    '"kettle',
    "\\",
    "|",
    "{}",
    "%%kettle%%",
    "~",
    "(((",
    ")))",
    "ns:*",
    "'; DROP TABLE memories; --",
    "$",
    "@",
    "kettle | -kettle",
    "a*",
    "=>[KNN 10 @embedding $vec]",
    "kettle\tbroken",
    "ケトル",
    "🫖🫖🫖",
    "\u202ekettle",
    "x" * 5000,
    "kettle " * 500,
    "zzzz qqqq",
    "\x7f\x1b[31m",
    "[/]",
    "[bold]kettle[/bold]",
    "[link=file:///etc/passwd]x",
]


@pytest.mark.parametrize("query", SEARCH_SYNTAX, ids=lambda q: repr(q)[:30])
def test_search_syntax_never_errors_or_matches_everything(seeded: Agent, query: str) -> None:
    before = seeded.image()
    out = seeded("memory", "search", query, "--json", "--limit", "50")
    assert out.code in (0, 2), out.text
    hits = json.loads(out.stdout) if out.stdout.strip() else []
    assert isinstance(hits, list)
    assert len(hits) < 3, f"{query!r} matched everything: {hits}"
    assert seeded.image() == before


def test_search_still_finds_real_words(seeded: Agent) -> None:
    out = seeded("memory", "search", "kettle", "--json")
    assert out.code == 0
    assert any("kettle" in hit["content"] for hit in json.loads(out.stdout))


USAGE = [
    ("frobnicate",),
    ("memory", "frobnicate"),
    ("memory", "search"),
    ("memory", "log", "x", "--no-such-flag"),
    ("checkpoint", "rollback"),
    ("--json", "frobnicate"),
]


@pytest.mark.parametrize("args", USAGE, ids=lambda a: " ".join(a))
def test_usage_errors_exit_64_not_2(seeded: Agent, args: tuple[str, ...]) -> None:
    out = seeded.refuses(*args, codes=(64,))
    if "--json" in args:
        assert "error" in json.loads(out.stdout)


def test_json_errors_are_one_object_on_stdout(seeded: Agent) -> None:
    out = seeded.refuses("--json", "checkpoint", "show", "01ZZZZZZZZ", codes=(1,))
    assert set(json.loads(out.stdout)) == {"error"}


def test_user_text_that_looks_like_markup_prints_as_text(fresh: Agent) -> None:
    assert fresh("checkpoint", "create", "--label", "[/] [bold]x").code == 0
    listed = fresh("checkpoint", "list")
    assert listed.code == 0 and "[/] [bold]x" in listed.stdout
    preview = fresh("context", "preview", "[/]")
    assert preview.code == 0, preview.text
    missing = fresh("memory", "search", "[/]")
    assert missing.code == 2 and "[/]" in missing.stderr
    error = fresh("memory", "day", "[/]")
    assert error.code == 1 and "'[/]' is not a date" in error.stderr
