"""Replacing and forgetting what the user describes, not only what an id names.

* :meth:`Revisions.replace` ("replace what you know about my employer with this") retires
  every active belief, log entry and note that states the described attribute of that
  subject (their neighbours stay) and records the new fact, in one journaled change:
  a rollback or an undo covers it whole. The retired ones are ``superseded`` by the new
  belief, so history links old to new.
* :meth:`Revisions.forget_about` ("forget everything about Marta") marks ``forgotten``
  every active memory whose subject is that entity or one of its aliases (the graph's),
  never one that only shares an attribute with it (Ivo, who climbs at Marta's gym).

Both read statements with :mod:`aether.memory.knowledge.facts` and names with
:mod:`aether.identifiers`; both can preview (list, change nothing).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from redisvl.query.filter import Tag

from aether.errors import InvalidOperationError, NotFoundError
from aether.identifiers import IdentifierMatcher, fold
from aether.ids import ID_LENGTH
from aether.memory.knowledge.beliefs import BELIEF_FIELDS, REMEMBER_TAG, Beliefs
from aether.memory.knowledge.extraction import clauses
from aether.memory.knowledge.facts import Claim, describe, parse, split_compound
from aether.memory.knowledge.graph import Graph
from aether.memory.retrieval.text import query_tokens
from aether.memory.storage.status import INACTIVE, Status, is_active
from aether.memory.tiers.daily import DailyLog, build_entry
from aether.store.state import Mutation

__all__ = ["Revision", "Revisions", "Touched"]


CANDIDATES = 200
"""At most this many memories are read per search for what a revision touches."""
_KINDS = ("belief", "daily", "longterm")


@dataclass(frozen=True)
class Touched:
    """A memory a revision retires (or would, in a preview)."""

    id: str
    kind: str
    content: str
    key: str

    def to_dict(self) -> dict[str, str]:
        """Its id, kind and content."""
        return {"id": self.id, "kind": self.kind, "content": self.content}


@dataclass
class Revision:
    """What a replace or a forget did (or would do)."""

    touched: list[Touched] = field(default_factory=list)
    subject: str = ""
    attribute: str = ""
    belief: str | None = None
    """The new belief (a replace that ran)."""
    entry: str | None = None
    """The daily entry that records the new fact (a replace that ran)."""
    names: list[str] = field(default_factory=list)
    """The spellings a forget looked for (the name and the graph's aliases)."""


@dataclass(frozen=True)
class ErasureTarget:
    """What an erasure of a description looks for (see :meth:`Revisions.erasure_target`)."""

    text: str
    aliases: list[str]
    warnings: list[str]


_ABOUT = re.compile(
    r"^(?:everything|anything|all|whatever)\s+(?:we know\s+|is known\s+)?(?:about|on|of)\s+",
    re.IGNORECASE,
)


def claims_of(content: str, aliases: dict[str, str]) -> list[Claim]:
    """The claims a memory's text makes, clause by clause."""
    out = []
    for clause in clauses(content):
        for part in split_compound(clause):
            claim = parse(part, aliases)
            if claim is not None:
                out.append(claim)
    return out


class Revisions:
    """Replace and forget by description, over one namespace's beliefs.

    Args:
        beliefs: the belief lifecycle (its layer, search and graph are used).
    """

    def __init__(self, beliefs: Beliefs) -> None:
        self.beliefs = beliefs
        self.memory = beliefs.memory
        self.keys = beliefs.memory.keys
        self.graph = Graph(beliefs.memory)

    # ------------------------------------------------------------------ replace

    async def replace(
        self,
        target: str,
        content: str,
        *,
        preview: bool = False,
        source: str = "user",
        session: str | None = None,
        now: float | None = None,
    ) -> Revision:
        """Retire what ``target`` describes and record ``content`` in its place.

        Args:
            target: an id of a belief, note or entry, or a description ("my employer",
                "Marta's phone number", "where I live").
            content: the new fact.
            preview: list what would be retired; change nothing.
            source: who states the new fact (its daily entry's source).
            session: the conversation it belongs to.
            now: the time it is.

        Raises:
            InvalidOperationError: empty text, or a target that names no attribute (say
                "the user's employer", not "it").
            NotFoundError: an id that names no memory.
        """
        if not content.strip() or not target.strip():
            raise InvalidOperationError("replace needs a target and the new fact")
        when = now or time.time()
        aliases = await self.beliefs.aliases(f"{target} {content}")
        slot, named = await self._slot(target.strip(), content, aliases)
        subject, attribute = slot
        found = await self._stating(
            f"{target} {content}", aliases, lambda c: (c.subject, c.attribute) == slot
        )
        if named is not None and all(t.key != named.key for t in found):
            found.insert(0, named)
        revision = Revision(touched=found, subject=subject, attribute=attribute)
        if preview:
            return revision
        entry = build_entry(
            self.memory,
            content,
            source=source,
            tags=[REMEMBER_TAG],
            session=session,
            timestamp=when,
        )
        m = DailyLog(self.memory).mutation([entry])
        claims = [c for c in claims_of(content, aliases) if (c.subject, c.attribute) == slot]
        new = self.beliefs._build(
            content.strip(),
            "fact",
            entry["id"],
            [],
            when,
            supersedes=next((t.id for t in found if t.kind == "belief"), None),
            slots=list(dict.fromkeys(c.slot for c in claims)) or [_slot_key(slot)],
        )
        vector = await self.memory.embed(content)
        await self.beliefs._write_new(new, vector, when, m=m)
        await self._retire(m, found, new["id"], when)
        await self.memory.store.apply(m, "memory.replace")
        revision.belief, revision.entry = new["id"], entry["id"]
        return revision

    async def _slot(
        self, target: str, content: str, aliases: dict[str, str]
    ) -> tuple[tuple[str, str], Touched | None]:
        """The (subject, attribute) the target names, and the memory it names by id."""
        if len(target) == ID_LENGTH and target.isalnum():
            doc = await self._by_id(target)
            claims = claims_of(doc.content, aliases)
            if not claims:
                raise InvalidOperationError(
                    f"memory {target} states no attribute that could be replaced; forget it "
                    "and remember the new fact instead"
                )
            return (claims[0].subject, claims[0].attribute), doc
        if not query_tokens(target):
            raise InvalidOperationError(
                f'{target!r} names nothing to replace: describe it ("the user\'s employer", '
                "\"Marta's phone number\") or give a memory's id"
            )
        described = describe(target, aliases)
        if described is None:
            stated = parse(content, aliases)
            if stated is None:
                raise InvalidOperationError(
                    f"{target!r} names no attribute to replace: describe it (\"the user's "
                    'employer", "Marta\'s phone number") or give a memory\'s id'
                )
            described = stated.subject, stated.attribute
        return described, None

    async def _by_id(self, memory_id: str) -> Touched:
        candidates = [
            ("belief", self.keys.belief(memory_id)),
            ("longterm", self.keys.longterm(memory_id)),
            ("daily", self.keys.daily_entry(memory_id)),
        ]
        docs = await self.memory.get_docs([k for _, k in candidates], ("id", "content", "status"))
        for (kind, key), doc in zip(candidates, docs, strict=True):
            if doc is not None:
                if doc.get("status") in INACTIVE:
                    raise InvalidOperationError(f"memory {memory_id} is {doc.get('status')}")
                return Touched(memory_id, kind, str(doc.get("content", "")), key)
        raise NotFoundError(f"no memory {memory_id!r}")

    # ------------------------------------------------------------------ forget

    async def forget_about(
        self, about: str, *, preview: bool = False, now: float | None = None
    ) -> Revision:
        """Forget every active memory whose subject is ``about`` (or one of its aliases).

        Raises:
            InvalidOperationError: an empty name.
        """
        if len(about.strip()) < 2:
            raise InvalidOperationError("say whom or what to forget (a name of 2+ characters)")
        names = await self.spellings(about)
        matcher = IdentifierMatcher(names)
        aliases = await self.beliefs.aliases(" ".join(names))
        found = await self._stating(
            " ".join(names), aliases, lambda c: matcher.in_text(c.subject), names
        )
        revision = Revision(touched=found, subject=fold(about.strip()), names=names)
        if preview or not found:
            return revision
        when = now or time.time()
        m = Mutation()
        beliefs = [t.key for t in found if t.kind == "belief"]
        for doc in await self.memory.get_docs(beliefs, BELIEF_FIELDS):
            if doc is not None and is_active(doc.get("status")):
                self.beliefs._status_ops(m, doc, Status.FORGOTTEN)
                self.beliefs._event(m, doc["id"], "forget", when, about=about.strip())
        others = [t.key for t in found if t.kind != "belief"]
        await self.beliefs.mark(m, others, Status.FORGOTTEN)
        await self.memory.store.apply(m, "memory.forget")
        return revision

    async def spellings(self, name: str) -> list[str]:
        """``name`` and the aliases the graph knows it by (or the name it is an alias of)."""
        wanted = name.strip()
        matcher = IdentifierMatcher([wanted])
        out = [wanted]
        for entity in await self.graph.find(wanted, limit=20):
            every = [entity["name"], *entity.get("aliases", [])]
            if any(matcher.in_text(n) and IdentifierMatcher([n]).in_text(wanted) for n in every):
                out += every
        return list(dict.fromkeys(n.strip() for n in out if n.strip()))

    # ------------------------------------------------------------------ erase

    async def erasure_target(self, description: str) -> ErasureTarget:
        """What erasing ``description`` means: the name, its aliases, and the warnings.

        "everything about customer Olga Ivanova" is the entity the graph knows as "Olga
        Ivanova", with its aliases ("Ольга Иванова"); a name the graph knows ("Olga
        Ivanova") brings its aliases; any other text is erased as written ("Dr Quimby" is
        not "Quimby"). The warnings name the graph's names that share a word with it
        but are not erased ("Quimby" when erasing "Dr Quimby").
        """
        described = _ABOUT.sub("", description.strip()).strip() or description.strip()
        loose = described != description.strip()  # "everything about ...": a description
        text_, aliases = described, []
        best = ""
        for entity in await self.graph.find(described, limit=20):
            every = [entity["name"], *entity.get("aliases", [])]
            held = [
                n
                for n in every
                if len(n) >= 3
                and (
                    fold(n) == fold(described)
                    or (loose and IdentifierMatcher([n]).in_text(described))
                )
            ]
            if held and len(max(held, key=len)) > len(best):
                best = max(held, key=len)
                text_, aliases = best, [n for n in every if n != best]
        matcher = IdentifierMatcher([text_, *aliases])
        wanted = {w for n in [text_, *aliases] for w in query_tokens(fold(n)) if len(w) > 2}
        warnings = []
        for entity in await self.graph.find(" ".join([text_, *aliases]), limit=50):
            for name in [entity["name"], *entity.get("aliases", [])]:
                shares = wanted & set(query_tokens(fold(name)))
                if shares and not matcher.in_text(name):
                    warnings.append(
                        f"the graph also knows the {entity['type']} {name!r}, which this does "
                        f"not erase (erase it too if it is the same: aether erase {name!r})"
                    )
        return ErasureTarget(text_, aliases, list(dict.fromkeys(warnings)))

    # ------------------------------------------------------------------ shared

    async def _stating(
        self,
        words: str,
        aliases: dict[str, str],
        wanted: Any,
        names: list[str] | None = None,
    ) -> list[Touched]:
        """Active memories with a clause whose claim ``wanted`` accepts."""
        keys = await self._candidates(words, names or [])
        docs = await self.memory.get_docs(keys, ("id", "kind", "content", "status"))
        out = []
        for key, doc in zip(keys, docs, strict=True):
            if doc is None or doc.get("status") in INACTIVE or doc.get("kind") not in _KINDS:
                continue
            content = str(doc.get("content", ""))
            if any(wanted(c) for c in claims_of(content, aliases)):
                out.append(Touched(str(doc["id"]), str(doc["kind"]), content, key))
        return out

    async def _candidates(self, words: str, names: list[str]) -> list[str]:
        """Keys of memories that may state it.

        A full-text match on its words (and each name), and the beliefs of its slots.
        """
        keys: list[str] = []
        for text_ in [words, *names]:
            keys += await self.beliefs.text_keys(text_, Tag("kind") == list(_KINDS), CANDIDATES)
        for claim in claims_of(words, {}):
            keys += [self.keys.belief(d["id"]) for d in await self.beliefs.in_slot(claim.slot)]
        return list(dict.fromkeys(keys))

    async def _retire(self, m: Mutation, found: list[Touched], by: str, now: float) -> None:
        beliefs = [t for t in found if t.kind == "belief"]
        docs = await self.memory.get_docs([t.key for t in beliefs], BELIEF_FIELDS)
        for doc in docs:
            if doc is not None and is_active(doc.get("status")):
                self.beliefs.retire(m, doc, by, now, [by])
        others = [t.key for t in found if t.kind != "belief"]
        await self.beliefs.mark(m, others, Status.SUPERSEDED, by)


def _slot_key(slot: tuple[str, str]) -> str:
    return Claim(slot[0], slot[1], frozenset(), False, True, frozenset()).slot
