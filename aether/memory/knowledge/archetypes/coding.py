"""The coding archetype (the primary one): files, symbols, imports, calls, tests.

From ``file_read``/``file_write``/``file_edit`` events whose payload holds ``path`` and
``text`` it extracts the file, its functions and classes (named ``path:Class.method``,
with the plain name as an alias), the module the file provides and the modules it
imports; relations: ``defines`` (file -> symbol), ``implements`` (file -> its module),
``imports`` (file -> module), ``calls`` (function -> function in the same file) and
``tests`` (a test file -> what it imports, and its sibling under test). ``error`` events
become ``error_pattern`` entities ``caused_by`` the file they name.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from types import MappingProxyType

from aether.memory.code.extract import extract
from aether.memory.code.model import CodeFacts, language_of
from aether.memory.code.modules import module_of, resolve_import
from aether.memory.knowledge.archetypes.base import ContextStrategy
from aether.memory.knowledge.graph import EntityIn, RelationIn, entity_id
from aether.memory.storage.records import Event
from aether.memory.tiers.patterns import pattern_key

FILE_EVENTS = ("file_read", "file_write", "file_edit")


def _facts(event: Event) -> CodeFacts | None:
    payload = event.get("payload") or {}
    path, source = payload.get("path"), payload.get("text")
    if not isinstance(path, str) or not path or not isinstance(source, str):
        return None
    return extract(path, source)


def _qualified(facts: CodeFacts, name: str, parent: str | None) -> str:
    return f"{facts.path}:{parent + '.' if parent else ''}{name}"


def file_entities(event: Event) -> list[EntityIn]:
    """The file, its symbols, its module and the modules it imports."""
    path = (event.get("payload") or {}).get("path")
    if not isinstance(path, str) or not path:
        return []
    facts = _facts(event)
    language = language_of(path) or "other"
    entities = [
        EntityIn(
            "file",
            path,
            properties={"language": language, "test": bool(facts and facts.is_test)},
            salience=0.4,
        )
    ]
    if facts is None:
        return entities
    for s in facts.symbols:
        kind = "function" if s.kind == "function" else "class"
        qual = f"{s.parent}.{s.name}" if s.parent else s.name
        entities.append(
            EntityIn(
                kind,
                _qualified(facts, s.name, s.parent),
                aliases=list(dict.fromkeys([s.name, qual])),
                properties={"path": path, "line": s.line},
            )
        )
    own = module_of(path, facts.language)
    if own:
        entities.append(EntityIn("module", own, properties={"path": path}))
    imported, tested = _modules(facts)
    entities += [EntityIn("module", name) for name in dict.fromkeys([*imported, *tested])]
    return entities


def _modules(facts: CodeFacts) -> tuple[list[str], list[str]]:
    """(modules the file imports, modules it tests)."""
    imported = [resolve_import(facts.path, spec, facts.language) for spec in facts.imports]
    tested: list[str] = []
    if facts.is_test:
        tested = list(imported)
        sibling = _tested_sibling(facts.path, facts.language)
        if sibling and sibling not in tested:
            tested.append(sibling)
    return imported, tested


def file_relations(event: Event, entities: list[EntityIn]) -> list[RelationIn]:
    """defines, implements, imports, calls and tests."""
    facts = _facts(event)
    if facts is None:
        return []
    scope = entities[0].scope if entities else "global"
    path = facts.path
    file_id = entity_id("file", path, scope)
    relations: list[RelationIn] = []
    by_name: dict[str, str] = {}
    for s in facts.symbols:
        kind = "function" if s.kind == "function" else "class"
        sid = entity_id(kind, _qualified(facts, s.name, s.parent), scope)
        relations.append(RelationIn("defines", file_id, sid))
        if kind == "function":
            by_name.setdefault(s.name, sid)
    own = module_of(path, facts.language)
    if own:
        relations.append(RelationIn("implements", file_id, entity_id("module", own, scope)))
    imported, tested = _modules(facts)
    relations += [RelationIn("imports", file_id, entity_id("module", m, scope)) for m in imported]
    relations += [RelationIn("tests", file_id, entity_id("module", m, scope)) for m in tested]
    for caller, callee in facts.calls:
        if caller in by_name and callee in by_name and caller != callee:
            relations.append(RelationIn("calls", by_name[caller], by_name[callee]))
    return relations


def _tested_sibling(path: str, language: str) -> str | None:
    """``test_foo.py`` tests module ``foo`` beside it; ``x.test.ts`` tests ``x``."""
    p = PurePosixPath(path)
    if language == "python" and p.stem.startswith("test_"):
        if "tests" in p.parts[:-1]:  # tests/ beside the package: what it imports is tested
            return None
        return module_of(str(p.with_name(p.stem[5:] + ".py")), "python")
    for marker in (".test", ".spec", "_test"):
        if p.stem.endswith(marker):
            sibling = p.with_name(p.stem[: -len(marker)] + p.suffix)
            return module_of(str(sibling), language) or str(sibling.with_suffix(""))
    return None


def error_entities(event: Event) -> list[EntityIn]:
    """The error's pattern, and the file it happened in."""
    payload = event.get("payload") or {}
    message = str(payload.get("message") or event.get("content") or "")
    if not message.strip():
        return []
    out = [EntityIn("error_pattern", pattern_key(message), aliases=[message[:200]], salience=0.5)]
    path = payload.get("path")
    if isinstance(path, str) and path:
        out.append(EntityIn("file", path, salience=0.4))
    return out


def error_relations(event: Event, entities: list[EntityIn]) -> list[RelationIn]:
    """The error pattern is caused_by the file."""
    if len(entities) < 2:
        return []
    return [RelationIn("caused_by", entities[0].id, entities[1].id)]


class CodingArchetype:
    """An AI coding agent working on software."""

    name = "coding"
    event_types = (
        "file_read",
        "file_write",
        "file_edit",
        "shell_exec",
        "search",
        "error",
        "user_message",
        "agent_response",
    )
    extractors = MappingProxyType(
        {**dict.fromkeys(FILE_EVENTS, file_entities), "error": error_entities}
    )
    relation_extractors = MappingProxyType(
        {**dict.fromkeys(FILE_EVENTS, file_relations), "error": error_relations}
    )
    strategy = ContextStrategy(
        0.3, 0.5, 0.2, {"recent": 15, "semantic": 40, "entities": 25, "relations": 20}
    )
    tools = ("read_file", "write_file", "edit_file", "glob", "grep", "bash")
