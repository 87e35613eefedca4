"""The keyspace: DESIGN.md's names, built from the namespace, and nowhere else."""

from __future__ import annotations

import ast
import re
from datetime import date
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from aether.keys import _NON_STATE_FAMILIES, _OWNED, Keyspace


def test_design_key_names() -> None:
    k = Keyspace("aether")
    assert k.identity_profile() == "aether:identity:profile"
    assert k.user_profile() == "aether:user:profile"
    assert k.identity_files() == "aether:identity:files"
    assert k.system_flags() == "aether:system:flags"
    assert k.heartbeat_state() == "aether:system:heartbeat_state"
    assert k.daily(date(2026, 2, 3)) == "aether:daily:2026-02-03"
    assert k.daily_entry("x") == "aether:daily:entry:x"
    assert k.longterm("x") == "aether:longterm:x"
    assert k.belief("x") == "aether:belief:x"
    assert k.checkpoint("x") == "aether:checkpoint:x"
    assert k.checkpoints() == "aether:checkpoints"
    assert k.journal() == "aether:journal"
    assert k.scratchpad("x") == "aether:scratchpad:x"
    assert k.episode("s") == "aether:episode:s"
    assert k.tools("s") == "aether:tools:s"
    assert k.chat_session("s") == "aether:chat:session:s"
    assert k.chat_messages("s") == "aether:chat:messages:s"
    assert k.chat_session_index() == "aether:chat:session:index"
    assert k.memory_index() == "aether:memory:idx"
    assert (k.inbox(), k.outbox(), k.events()) == ("aether:inbox", "aether:outbox", "aether:events")


def test_cluster_hash_tag_namespace() -> None:
    k = Keyspace("{bot}")
    assert k.journal() == "{bot}:journal" and k.identity_profile().startswith("{bot}:")


def test_state_classification() -> None:
    k = Keyspace("a")
    state = [
        k.identity_profile(),
        k.daily(date.today()),
        k.daily_entry("1"),
        k.longterm("1"),
        k.belief("1"),
        k.chat_session("s"),
        k.chat_messages("s"),
        k.episode("s"),
        k.system_flags(),
        k.relations_retired("e"),
    ]
    outside = [
        k.journal(),
        k.checkpoint("1"),
        k.checkpoints(),
        k.checkpoints_pruned(),
        k.scratchpad("1"),
        k.tools("s"),
        k.heartbeat_state(),
        k.inbox(),
        k.outbox(),
        k.admin_lock(),
        k.rollbacks(),
        k.archive_cursor(),
        k.approval("1"),
        k.approvals(),
        "b:identity:profile",
    ]
    assert all(k.is_state(key) for key in state)
    assert not any(k.is_state(key) for key in outside)
    assert k.tier(k.daily_entry("1")) == "daily" and k.tier(k.system_flags()) == "identity"
    assert k.tier(k.relations_retired("e")) == "graph"


def test_no_other_module_spells_a_key() -> None:
    families = re.compile(
        r"(^|:)(identity|daily|longterm|belief|checkpoints?|journal|scratchpad|episode|tools|"
        r"chat|memory|inbox|outbox|events|system|user|rollbacks|lock|archive):"
    )
    package = Path(__file__).parent.parent / "aether"
    offenders = []
    for path in package.rglob("*.py"):
        if path.name == "keys.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
            if is_text and families.search(node.value) and " " not in node.value:
                offenders.append(f"{path.name}: {node.value!r}")
    assert offenders == []


_FAMILY_PIECES = [*_NON_STATE_FAMILIES, *(f for f, _ in _OWNED), "vec:", "belief:", "x", ":", "#2"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FAMILY_PIECES) | st.text(max_size=3), max_size=4).map("".join))
@example(rest="vec:memory:daily:entry:x#2")
@example(rest="beliefs:history:x#2:y")
@pytest.mark.parametrize("ns", ["ns", "a#b"])
def test_key_families_are_their_definitions(ns: str, rest: str) -> None:
    """The classifications as the family lists define them, on any name."""
    k = Keyspace(ns)
    key = k.prefix + rest
    assert k.is_state(key) == (
        not any(rest == f or (f.endswith(":") and rest.startswith(f)) for f in _NON_STATE_FAMILIES)
    )
    owner = next((f"{ns}:{o}:{rest[len(f) :]}" for f, o in _OWNED if rest.startswith(f)), None)
    if not key.startswith(k.vector_prefix()):
        assert k.owner(key) == owner
    vector = key.startswith(k.vector_prefix())
    assert k.is_secondary(key) == (
        "#" in key.removeprefix(k.vector_prefix()) if vector else owner is not None
    )
    # an erasure rules a key out by its mark: it must be the mark of what the key belongs to
    for name in (key, rest):
        assert k.item_mark(name) in re.split("[:#]", name)  # found by splitting the name
        if (item := k.owner(name)) is not None:
            assert k.item_mark(name) == k.item_mark(item)


def test_a_key_is_named_by_what_its_caller_chose_and_nothing_else() -> None:
    """Every builder given an outside name yields it among the key's named parts (decoded);
    keys aether names itself (generated ids, days, fixed names) have none."""
    k = Keyspace("ns")
    name = "Marta Quill/ü:x"
    chosen = {
        k.chat_session(name),
        k.chat_messages(name),
        k.episode(name),
        k.timeline(name),
        k.scratchpad(name),
        k.tools(name),
        k.registry_tool(name),
        k.lg_namespaces(name),
        k.lg_checkpoints(name, ""),
        k.lg_checkpoint(name, "", "1ef"),
        k.lg_blob(name, "", "messages", "3"),
        k.lg_blobs(name),
        k.lg_writes(name, "", "1ef"),
        k.lg_write(name, "", "1ef", "task", 0),
    }
    for key in chosen:
        assert name in k.named_parts(key), key
    assert k.named_parts(k.lg_item(("users", "marta"), name)) == ["users", "marta", name]
    assert k.named_parts(k.lg_store_keys(("users", "marta"))) == ["users", "marta"]
    generated = [
        k.chat_session_index(),
        k.daily(date(2026, 3, 1)),
        k.daily_entry("01J8"),
        k.belief("01J8"),
        k.entity("01J8"),
        k.registry(),
        k.journal(),
        k.memory_topics(),
        k.lg_threads(),
        k.lg_store_namespaces(),
        "other:chat:session:marta",  # another namespace's
    ]
    assert all(k.named_parts(key) == [] for key in generated)
    assert k.named_members(k.lg_store_namespaces(), b"users.marta") == ["users", "marta"]
    assert k.named_members(k.memory_topics(), "lg:users.marta") == ["users", "marta"]
    assert k.named_members(k.memory_topics(), "client:marta") == []
    assert k.named_members(k.lg_threads(), "users.marta") == []
    # a thread's checkpoint ids, namespace and channels are the graph's own, not names
    assert k.named_parts(k.lg_blob("t1", "child", "messages", "3")) == ["t1"]
