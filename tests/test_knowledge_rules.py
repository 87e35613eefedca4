"""Facts kept, replaced and forgotten as the user means (issue 63).

The pure rules (identifiers, claims), property tests of the identifier matcher, and the
operations over a real Redis: remember, replace, forget --about, erase by spelling and
alias, learning from a conversation, a question about a kind of thing; the CLI faces.
"""

from __future__ import annotations

import json
import random
import string
import sys
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from aether.config import Settings
from aether.errors import InvalidOperationError
from aether.identifiers import (
    _ESCAPE,
    _LETTERS,
    _MARKS,
    IdentifierMatcher,
    _unescape,
    ascii_folds,
    ascii_skeleton,
    fold,
)
from aether.identity.bootstrap import default_identity_dir
from aether.memory.knowledge.extraction import extract, is_question
from aether.memory.knowledge.facts import Relation, describe, parse, relation, split_compound
from aether.memory.retrieval.kinds import asked_kind
from aether.operations import REGISTRY, Caller, Parts
from aether.store.redaction import Needle
from tests.conftest import invoke_cli

# ----------------------------------------------------------------------- identifiers

TOKEN = st.text(alphabet=string.ascii_letters + string.digits, min_size=3, max_size=10)
IDENT = st.lists(TOKEN, min_size=1, max_size=4).map("-".join)


@settings(max_examples=200, deadline=None)
@given(ident=IDENT, sep=st.sampled_from(["-", " ", ".", "", "_"]), upper=st.booleans())
def test_a_variant_of_an_identifier_always_matches(ident: str, sep: str, upper: bool) -> None:
    parts = ident.split("-")
    variant = sep.join(parts)
    variant = variant.upper() if upper else variant.lower()
    holds_digit = any(c.isdigit() for c in ident)
    if sep == "" and not holds_digit and len(parts) > 1:
        return  # words run together are another word ("A da" is not "Ada")
    assert IdentifierMatcher([ident]).in_text(f"see {variant}, then stop")
    assert IdentifierMatcher([ident]).in_text(f"#{variant}")


@settings(max_examples=200, deadline=None)
@given(
    ident=IDENT,
    extension=st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=3),
    joiner=st.sampled_from(["", ".", "-", "@", "_"]),
    before=st.booleans(),
)
def test_a_token_extension_never_matches(
    ident: str, extension: str, joiner: str, before: bool
) -> None:
    longer = f"{extension}{joiner}{ident}" if before else f"{ident}{joiner}{extension}"
    assert not IdentifierMatcher([ident]).in_text(f"see {longer} now")


@pytest.mark.parametrize(
    ("spelling", "text", "found"),
    [
        ("INV-7731", "Invoice INV-7731B is paid.", False),
        ("INV-7731", "invoice inv 7731 is disputed", True),
        ("4410", "extension 44107", False),
        ("lee@kiln.co", "write to lee@kiln.co.nz", False),
        ("lee@kiln.co", "write to bree@kiln.co", False),
        ("lee@kiln.co", "Write to LEE@KILN.CO.", True),
        ("123e4567-e89b-12d3-a456-426614174000", "id 123E4567E89B12D3A456426614174000", True),
        ("+351 912 345 678", "call +351.912.345.678", True),
        ("@mira_k", "ask mira_k", True),
        ("Jose Alvarez", "José Álvarez called", True),
        ("Soren", "Søren called", True),
        ("Ada", "A da", False),
        ("Ada", "Adam", False),
    ],
)
def test_identifier_spellings(spelling: str, text: str, found: bool) -> None:
    assert IdentifierMatcher([spelling]).in_text(text) is found


def test_a_needle_carries_its_aliases_and_refuses_punctuation() -> None:
    needle = Needle("Olga Ivanova", ["Ольга Иванова"])
    assert needle.in_text("звонила Ольга Иванова") and needle.in_value(b"OLGA IVANOVA")
    assert Needle.unsealed(needle.sealed()).aliases == ["Ольга Иванова"]
    with pytest.raises(InvalidOperationError, match="no letters or digits"):
        Needle("*** ---")
    assert fold("ZOË") == "zoe"


_FOLDED_PIECES = [*"aZ9 -_.øŁđĦıŀßÆœÞðŧé\u0301ｋ²½İΣς\ufffd\x00", "Ø", "Ōtsuka", "\\u00f8"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FOLDED_PIECES) | st.text(max_size=3), max_size=30).map("".join))
def test_folding_is_its_definition(text: str) -> None:
    """NFKC, case folding, the Latin letters NFD keeps whole, marks removed, NFC."""
    plain = _ESCAPE.sub(_unescape, text) if "\\" in text else text
    if plain.isascii():
        expected = plain.lower()
    else:
        folded = unicodedata.normalize("NFKC", plain).casefold().translate(_LETTERS)
        expected = (
            folded
            if folded.isascii()
            else unicodedata.normalize("NFC", _MARKS.sub("", unicodedata.normalize("NFD", folded)))
        )
    assert fold(text) == expected


def test_the_ascii_folds_are_every_character_that_folds_to_ascii() -> None:
    """Checked one character at a time over all of Unicode (the table skips blocks)."""
    basic, table = ascii_folds()
    for code in range(0x80, sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        kept = "".join(c for c in fold(char) if c in string.ascii_lowercase + string.digits + "@")
        assert table.get(char, "") == kept, hex(code)
        assert (basic.fullmatch(char) is not None) == (code > 0xFFFF or bool(kept))


_SPELLED = {
    "a": ["a", "A", "á", "Ａ", "ª", "\\u0041"],
    "k": ["k", "K", "\u212a", "ｋ"],
    "1": ["1", "¹", "１", "\U0001d7cf", "①"],
    "-": ["-", " ", "", "\u2010", "\ufffd", ".", "\\n"],
}
_NOISE = st.binary(max_size=40) | st.sampled_from([b"\\", b"\xc3", b"\\u00", b"\xf0\x9d"])


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(sorted(_SPELLED)), min_size=1, max_size=3),
    st.data(),
    _NOISE,
    _NOISE,
)
def test_the_quick_test_never_rules_out_a_spelling_folding_finds(
    pieces: list[str], data: st.DataObject, before: bytes, after: bytes
) -> None:
    """Whatever the bytes around it, a spelling found in the text passes the quick test."""
    spelling = "ak1-" + "".join(p for p in pieces if p != "-") + "9"
    written = "".join(
        data.draw(st.sampled_from(_SPELLED[c])) if c in _SPELLED else c for c in spelling
    )
    matcher = IdentifierMatcher([spelling])
    blob = before + written.encode("utf-8", "surrogatepass") + after
    if matcher.in_text(blob.decode("utf-8", "replace")):
        assert matcher.maybe_in(blob), blob


def _decoded_skeleton(blob: bytes) -> bytes:
    """The skeleton as it was first computed: the bytes decoded, each character folded."""
    text = blob.decode("utf-8", "replace")
    if "\\" in text:
        text = _ESCAPE.sub(_unescape, text)
    pattern, table = ascii_folds()
    text = pattern.sub(lambda m: table.get(m.group(), ""), text)
    encoded = text.encode("utf-8", "surrogatepass")
    return bytes(b for b in encoded.lower() if b < 0x80 and (chr(b).isalnum() or b == 0x40))


_FOLDABLE = sorted(ascii_folds()[1])


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.binary(max_size=12)
        | st.sampled_from(_FOLDABLE).map(str.encode)
        | st.sampled_from([b"\\u00e9", b"\\u0041", b"\\ud835", b"\\n", b"\\", b"\xed\xa0"])
        | st.text(max_size=6).map(lambda t: t.encode("utf-8", "surrogatepass")),
        max_size=12,
    )
)
def test_the_skeleton_read_from_bytes_is_the_decoded_texts(parts: list[bytes]) -> None:
    """``ascii_skeleton`` never decodes: whatever the bytes (invalid sequences, escapes,
    characters that fold to letters, astral ones), it gives what decoding and folding the
    text character by character gives."""
    blob = b"".join(parts)
    assert ascii_skeleton(blob) == _decoded_skeleton(blob), blob


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.binary(max_size=6)
        | st.sampled_from(_FOLDABLE).map(str.encode)
        | st.sampled_from([b"\\u00e9", b"\\u0131", b"\\n", b"-", b"1", b"a"]),
        max_size=14,
    ),
    st.integers(0, 40),
    st.integers(1, 6),
)
def test_the_skeleton_of_a_spellings_letters_holds_it_wherever_the_whole_one_does(
    parts: list[bytes], start: int, length: int
) -> None:
    """Folding only the characters that hold a skeleton's letters (the matcher's reading)
    finds that skeleton wherever folding every character finds it."""
    whole = ascii_skeleton(b"".join(parts))
    spelled = whole[start : start + length].decode()
    if spelled:
        letters = frozenset(spelled)
        assert spelled.encode() in ascii_skeleton(b"".join(parts), letters)
        assert set(ascii_skeleton(b"".join(parts), letters).decode()) <= set(whole.decode())


def test_the_quick_test_rules_out_binary_without_the_spelling() -> None:
    rng = random.Random(7)
    noise = bytes(rng.randrange(256) for _ in range(200_000))
    matcher = IdentifierMatcher(["INV-7731"])
    assert not matcher.maybe_in(noise + b" INV-7732 " + noise)
    assert matcher.maybe_in(noise + " ＩＮＶ－７７３１ ".encode() + noise)
    assert matcher.maybe_in(noise + b" \\u0049NV-7731 " + noise)
    assert Needle("INV-7731").in_raw(noise + " ＩＮＶ－７７３１ ".encode() + noise)


# ----------------------------------------------------------------------- claims


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "The production API key is pk_live_A1B2",
            "The staging API key is pk_test_Z9Y8",
            "distinct",
        ),
        ("Invoice INV-7731 is disputed", "Invoice INV-7731B is paid", "distinct"),
        ("Invoice INV-7731 is disputed", "Invoice INV-7731 is paid", "replaces"),
        ("Marta climbs at Boulder Barn", "Ivo climbs at Boulder Barn", "distinct"),
        ("Ana lives in Porto", "Rui lives in Porto", "distinct"),
        (
            "The user works at Halvard Bank as a data analyst",
            "The user left banking for a seed-stage robotics startup",
            "replaces",
        ),
        ("User eats meat", "User no longer eats meat", "replaces"),
        ("User eats meat", "User is vegetarian now", "replaces"),
        ("The office is in Manchester", "As of March the office is in Leeds", "replaces"),
        ("The user switched to a MacBook Air", "The user is back on the ThinkPad", "replaces"),
        ("I like coffee", "I like tea", "distinct"),
        ("I like coffee", "I don't like coffee", "replaces"),
        ("I live in Lisbon", "I live in Lisbon now", "same"),
        ("Lee's work email is a@b.io", "Lee's personal email is c@d.org", "distinct"),
        ("Lee's phone number is +1 555 1234", "Lee's new number is +1 555 9999", "replaces"),
        ("Server web-01 has IP 10.0.0.5", "Server web-02 has IP 10.0.0.6", "distinct"),
        ("Server web-01 has IP 10.0.0.5", "Server web-01 now has IP 10.0.0.9", "replaces"),
        ("Sam works at Acme", "Sam quit Acme", "replaces"),
    ],
)
def test_the_rules_relate_two_statements(old: str, new: str, expected: str) -> None:
    assert relation(parse(old), parse(new)) is Relation(expected)


def test_compounds_split_and_descriptions_name_a_slot() -> None:
    assert split_compound("The user is engaged to Priya and teaches at Lakeside School") == [
        "The user is engaged to Priya",
        "The user teaches at Lakeside School",
    ]
    assert split_compound("User likes tea and coffee") == ["User likes tea and coffee"]
    assert describe("my employer") == ("user", "employer")
    assert describe("Marta's phone number") == ("marta", "phone")
    assert describe("where I live") == ("user", "location")
    assert describe("it") is None
    assert parse("Where do I live?") is None


def test_the_extractor_states_facts_cleanly_and_never_questions() -> None:
    found = extract("User", 'I live in "Lisbon". Where do I live? Do you know Porto')
    assert [f.statement for f in found.facts] == ['User lives in "Lisbon".']
    assert all('"' not in e.name for e in found.entities)
    assert is_question("Do I work at Globex") and not is_question("I work at Globex")
    assert asked_kind("Which people did we talk about?") == "person"
    assert asked_kind("Who is Marta engaged to?") is None


# ----------------------------------------------------------------------- operations


@pytest.fixture
async def parts(settings: Settings, client: Redis) -> Parts:
    s = settings.model_copy(update={"embedding": {"provider": "none"}})
    wired = Parts(s, client, actor="test")
    await wired.ready()
    return wired


async def op(parts: Parts, operation_name: str, /, **args: Any) -> Any:
    operation = REGISTRY[operation_name]
    return operation.dump(await operation(parts, Caller("test"), operation.parse(args)))


async def active(parts: Parts) -> list[str]:
    listed = await op(parts, "belief_list")
    return sorted(b["content"] for b in listed["beliefs"])


async def test_distinct_facts_stay_and_a_changed_one_replaces(parts: Parts) -> None:
    await op(parts, "memory_remember", content="The production API key is pk_live_A1B2.")
    await op(parts, "memory_remember", content="The staging API key is pk_test_Z9Y8.")
    await op(parts, "memory_remember", content="Marta climbs at Boulder Barn")
    await op(parts, "memory_remember", content="Ivo climbs at Boulder Barn")
    await op(parts, "memory_remember", content="The user works at Halvard Bank")
    changed = await op(
        parts, "memory_remember", content="The user left banking for a robotics startup"
    )
    assert changed["beliefs"][0]["action"] == "superseded"
    assert await active(parts) == [
        "Ivo climbs at Boulder Barn",
        "Marta climbs at Boulder Barn",
        "The production API key is pk_live_A1B2.",
        "The staging API key is pk_test_Z9Y8.",
        "The user left banking for a robotics startup",
    ]


async def test_replace_by_description_is_one_change_a_rollback_undoes(parts: Parts) -> None:
    await op(parts, "memory_remember", content="Marta works at Globex")
    await op(parts, "memory_remember", content="Marta lives in Braga")
    await op(parts, "memory_remember", content="Ivo works at Globex")
    before = await active(parts)
    preview = await op(
        parts, "memory_replace", target="Marta's employer", content="x", preview=True
    )
    assert [r["content"] for r in preview["replaced"] if r["kind"] == "belief"] == [
        "Marta works at Globex"
    ]
    assert await active(parts) == before  # a preview changes nothing
    done = await op(
        parts, "memory_replace", target="Marta's employer", content="Marta works at Initech"
    )
    assert done["checkpoint"] and done["belief"]
    assert await active(parts) == [
        "Ivo works at Globex",
        "Marta lives in Braga",
        "Marta works at Initech",
    ]
    shown = await op(parts, "belief_show", id=preview["replaced"][-1]["id"])
    assert shown["belief"]["superseded_by"] == done["belief"]
    await op(parts, "checkpoint_rollback", id=done["checkpoint"])
    assert await active(parts) == before
    with pytest.raises(InvalidOperationError, match="names nothing"):
        await op(parts, "memory_replace", target="it", content="whatever happens")


async def test_forget_about_a_subject_and_its_alias_spares_the_neighbours(parts: Parts) -> None:
    await op(parts, "graph_alias", name="Marta Silva", alias="Marta")
    await op(parts, "memory_remember", content="Marta climbs at Boulder Barn")
    await op(parts, "memory_remember", content="Ivo climbs at Boulder Barn")
    await op(parts, "memory_log", content="Marta Silva prefers morning sessions")
    preview = await op(parts, "memory_forget", about="Marta Silva", preview=True)
    assert {i["content"] for i in preview["items"]} == {
        "Marta climbs at Boulder Barn",
        "Marta Silva prefers morning sessions",
    }
    done = await op(parts, "memory_forget", about="Marta Silva")
    assert done["checkpoint"] and set(done["names"]) == {"Marta Silva", "Marta"}
    assert await active(parts) == ["Ivo climbs at Boulder Barn"]
    found = await op(parts, "memory_search", query="morning sessions Marta")
    assert found["results"] == []
    nothing = await op(parts, "memory_forget", about="Nobody Known")
    assert nothing["items"] == [] and nothing["checkpoint"] is None
    with pytest.raises(InvalidOperationError):
        await op(parts, "memory_forget", id="01J0000000000000000000NONE", about="Marta")


async def test_erase_every_spelling_and_alias_never_a_lookalike(parts: Parts) -> None:
    await op(parts, "memory_log", content="Invoice INV-7731 is disputed.")
    await op(parts, "memory_log", content="Invoice INV-7731B is paid.")
    await op(parts, "memory_log", content="Call Lee on +351 912 345 678")
    await op(parts, "graph_alias", name="Olga Ivanova", alias="Ольга Иванова")
    await op(parts, "graph_alias", name="Quimby", alias="Q.")
    await op(parts, "memory_log", content="Ольга Иванова asked for a refund")
    await op(parts, "memory_log", content="Dr Quimby signed the form")
    plan = await op(parts, "erase", text="inv 7731", dry_run=True)
    report = await op(parts, "erase", text="inv 7731")
    assert plan["counts"]["state_removed"] == report["counts"]["state_removed"] > 0
    log = await op(parts, "erase_log")
    assert log["erasures"][0]["counts"]["state_removed"] == report["counts"]["state_removed"]
    await op(parts, "erase", text="+351.912.345.678")
    described = await op(parts, "erase", text="everything about customer Olga Ivanova")
    assert described["resolved"]["text"] == "Olga Ivanova"
    assert described["resolved"]["aliases"] == ["Ольга Иванова"]
    warned = await op(parts, "erase", text="Dr Quimby", dry_run=True)
    assert any("'Quimby'" in w for w in warned["resolved"]["warnings"])
    from datetime import UTC, datetime

    left = await op(parts, "memory_day", day=datetime.now(UTC).date().isoformat())
    texts = [e["content"] for e in left["entries"]]
    assert texts == ["Invoice INV-7731B is paid.", "Dr Quimby signed the form"]


async def test_learning_takes_facts_not_questions_nor_echoes(
    settings: Settings, client: Redis
) -> None:
    from aether.app import Aether

    s = settings.model_copy(update={"embedding": {"provider": "none"}})
    wired = Aether(s, client)
    await wired.ready()
    rt = wired.runtime("talk")
    await rt.identity.ensure(default_identity_dir())
    await rt.observe("user", "I live in Lisbon")
    await rt.observe("assistant", "So you work at Globex and live in Porto?")
    await rt.observe("user", "Where do I live?")
    await rt.observe("tool", "Badge issued for Initech HQ")
    await op(wired, "maintenance_run")
    beliefs = await active(wired)
    assert "User lives in Lisbon" in beliefs
    assert not any("?" in b or "Globex" in b or "Porto" in b for b in beliefs), beliefs


async def test_a_question_about_a_kind_of_thing_finds_those_things(parts: Parts) -> None:
    for fact in ("Marta lives in Braga", "Ivo works at Globex", "The report is due Friday"):
        await op(parts, "memory_remember", content=fact)
    found = await op(parts, "memory_search", query="Which people did we talk about?")
    contents = " ".join(r["content"] for r in found["results"])
    assert "Marta" in contents and "Ivo" in contents
    assert "report" not in contents


def test_the_cli_replaces_and_forgets_by_description(cli_env: dict[str, str]) -> None:
    def ok(*args: str) -> Any:
        done = invoke_cli(cli_env, *args, "--json")
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return json.loads(done.stdout)

    ok("remember", "I live in Lisbon")
    ok("remember", "Marta climbs at Crux")
    preview = ok("memory", "replace", "where I live", "I live in Porto", "--preview")
    assert preview["preview"] and preview["attribute"] == "location"
    refused = invoke_cli(cli_env, "memory", "replace", "where I live", "I live in Porto")
    assert refused.returncode != 0 and "--yes" in (refused.stdout + refused.stderr)
    done = ok("memory", "replace", "where I live", "I live in Porto", "--yes")
    assert done["belief"] and done["replaced"]
    forgot = ok("memory", "forget", "--about", "Marta", "--yes")
    assert [i["content"] for i in forgot["items"] if i["kind"] == "belief"] == [
        "Marta climbs at Crux"
    ]
    usage = invoke_cli(cli_env, "memory", "forget")
    assert usage.returncode != 0
    alias = ok("graph", "alias", "Olga Ivanova", "Ольга Иванова")
    assert alias["entities"][0]["aliases"] == ["Ольга Иванова"]
