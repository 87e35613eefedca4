"""A vector index of its own for each large tag: a filtered search walks a small graph.

At a million memories a tag on 5 % of them is 50,000 readings. A KNN under that filter
either compares them all (brute force, about 60 ms) or walks the whole graph in batches
filtered as they come (13-20 ms at the median, its tail far longer; decision 0011). An
HNSW graph of the tag's readings alone answers the same question as a plain KNN, a walk
of a graph twenty times smaller.

A scoped index has the namespace's vector index's schema, over the same hashes (its
prefix), with a ``FILTER`` expression RediSearch evaluates on each hash as it is written:
the tag among the hash's tags, in any case, as a tag filter matches it. A vector hash
keeps its tags with their ASCII letters in lower case
(:func:`~aether.memory.storage.index_schemas.folded_tag`); hashes written before that
keep them as written, so the expression lists each spelling of the tag the memories
carry (its *forms*, read from ``memory:topics``), rather than calling RediSearch's
``lower()``, which keeps about a kilobyte per hash it reads, never freed (1.35 GB for an
index made over a million memories). No key is written for it, and a rollback, an
erasure or an import moves it with the hashes.

Which tags (:meth:`ScopedIndexes.sync`, a maintenance step): up to ``memory.scoped_indexes``
of the tags more memories carry than brute force reaches for the index's size
(:func:`~aether.memory.retrieval.filter_size.brute_force_max`), the largest first. An
index is kept while its tag has at least half that many, and made again when the tag's
forms change. A tag whose characters cannot sit in the expression as they are (a quote, a
backslash, anything outside printable ASCII, a space at either end) gets none: its
searches walk the namespace's graph as before. A memory restored by a rollback or an
import with a form of the tag the index does not list is missing from it until the next
maintenance run makes it again.

A search uses a tag's index (:meth:`ScopedIndexes.ready`) only once it has scanned the
hashes that existed before it, asked again every few minutes (a restarted server scans
again). The index's name holds a digest of its tag, but its definition holds the tag
itself, and Redis's files keep definitions: an erasure drops the indexes whose tag holds
the erased text (:meth:`ScopedIndexes.drop_naming`) before the files are rewritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypedDict, cast

from redis.asyncio import Redis
from redis.commands.search.index_definition import IndexDefinition, IndexType
from redis.exceptions import ResponseError
from redisvl.index import AsyncSearchIndex
from redisvl.redis.utils import convert_bytes

from aether.codec import command, text
from aether.keys import Keyspace
from aether.memory.storage.index_schemas import TAG_SEPARATOR, fingerprint, folded_tag
from aether.store.redaction import Needle

__all__ = [
    "READY_TTL_S",
    "IndexState",
    "ScopedIndex",
    "ScopedIndexes",
    "index_state",
    "scopable",
    "tag_filter",
    "tag_forms",
]

READY_TTL_S = 300.0
"""How long an answer about the scoped indexes (which exist, which have scanned their
hashes) is trusted before it is asked again; an index still scanning is asked about again
after a tenth of it."""

_SCOPABLE = re.compile(r"[\x20-\x7e]{1,64}")
_FORM = re.compile(r'contains\(format\("\x1f%s\x1f", @tags\), "\x1f([^"\\]*)\x1f"\)')


def scopable(tag: str) -> bool:
    """Whether ``tag`` can have a scoped index (its expression could not hold it otherwise).

    Printable ASCII without a quote or a backslash, and no space at either end: a tag
    filter ignores those spaces, the expression could not.
    """
    return (
        bool(_SCOPABLE.fullmatch(tag))
        and '"' not in tag
        and "\\" not in tag
        and tag == tag.strip(" ")
    )


def tag_forms(tag: str, seen: Iterable[str] = ()) -> list[str]:
    """The spellings of ``tag`` an index lists: its folded form and those ``seen``.

    Raises:
        ValueError: a spelling is not :func:`scopable`, or not a form of ``tag``.
    """
    folded = folded_tag(tag)
    forms = sorted({folded, *seen})
    for form in forms:
        if not scopable(form) or folded_tag(form) != folded:
            raise ValueError(f"tag {form[:40]!r} cannot have a scoped index for {tag[:40]!r}")
    return forms


def tag_filter(forms: list[str]) -> str:
    """The ``FILTER`` of an index of one tag: any of its ``forms`` (:func:`tag_forms`).

    ``exists(@tags)`` first: RediSearch leaves out a hash without the field when the index
    scans the hashes there before it, but lets one written afterwards in (an untagged
    memory's vector was found by a tag's search in the whole-product simulation).
    """
    sep = TAG_SEPARATOR
    found = (f'contains(format("{sep}%s{sep}", @tags), "{sep}{f}{sep}")' for f in forms)
    return f"exists(@tags) && ({' || '.join(found)})"


def _forms_of(expression: str) -> list[str] | None:
    """The forms a scoped index's ``FILTER`` lists (``None``: not one of ours)."""
    forms = _FORM.findall(expression)
    if not forms or tag_filter(forms) != expression:
        return None
    return list(forms)


@dataclass(frozen=True)
class ScopedIndex:
    """A tag's vector index, ready to search.

    Attributes:
        tag: the tag (lower case).
        index: the index, to query as the namespace's vector index is queried.
        readings: the readings it holds.
    """

    tag: str
    index: AsyncSearchIndex
    readings: int


class ScopedIndexes:
    """The scoped vector indexes of one namespace's vector index.

    Args:
        client: the namespace's client.
        keys: the namespace's keyspace.
        clock: seconds, monotonic (tests move it).
    """

    def __init__(
        self, client: Redis, keys: Keyspace, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.keys = keys
        self._clock = clock
        self._listed: tuple[frozenset[str], float] | None = None
        self._ready: dict[str, tuple[int | None, float]] = {}
        self._indexes: dict[str, AsyncSearchIndex] = {}
        self._prints: dict[int, tuple[AsyncSearchIndex, str]] = {}

    def prefix(self) -> str:
        """The names of the namespace's scoped indexes begin with this."""
        return self.keys.scoped_index_prefix()

    def stem(self, vectors: AsyncSearchIndex, tag: str) -> str:
        """The start of the names of ``tag``'s indexes beside ``vectors``.

        A digest, never the tag; it covers the vector index's schema too, so an index made
        for an earlier embedder or datatype is never searched (maintenance drops it).
        """
        kept = self._prints.get(id(vectors))
        if kept is None or kept[0] is not vectors:  # asked by every search filtered by a tag
            kept = self._prints[id(vectors)] = (vectors, fingerprint(vectors.schema.to_dict()))
        schema = kept[1]
        digest = hashlib.sha256(f"{schema}\x00{folded_tag(tag)}".encode()).hexdigest()[:20]
        return f"{self.prefix()}{digest}-"

    def name(self, vectors: AsyncSearchIndex, tag: str, forms: list[str]) -> str:
        """The name of ``tag``'s index listing ``forms``.

        Its :meth:`stem` and a digest of the forms, so that an index made again for new
        forms has a name of its own.
        """
        digest = hashlib.sha256("\x00".join(forms).encode()).hexdigest()[:8]
        return self.stem(vectors, tag) + digest

    async def ready(self, vectors: AsyncSearchIndex, tag: str) -> ScopedIndex | None:
        """``tag``'s index when one exists and has scanned its hashes, else ``None``.

        Both answers are kept :data:`READY_TTL_S`; a server that refuses the question
        (no search module) answers ``None``.
        """
        if not scopable(tag):
            return None
        stem = self.stem(vectors, tag)
        now = self._clock()
        try:
            if self._listed is None or now - self._listed[1] > READY_TTL_S:
                self._listed = (frozenset(await self.names()), now)
            for name in sorted(n for n in self._listed[0] if n.startswith(stem)):
                kept = self._ready.get(name)
                if kept is None or now - kept[1] > (
                    READY_TTL_S if kept[0] is not None else READY_TTL_S / 10
                ):
                    kept = (await self._scanned(name), now)
                    self._ready[name] = kept
                if kept[0] is not None:
                    return self._scoped(vectors, tag, name, kept[0])
        except ResponseError:
            return None
        return None

    def _scoped(self, vectors: AsyncSearchIndex, tag: str, name: str, readings: int) -> ScopedIndex:
        index = self._indexes.get(name)
        if index is None:  # a schema built once per index: a search asks for it each time
            index = AsyncSearchIndex.from_dict(
                {**vectors.schema.to_dict(), "index": {**_index_part(vectors), "name": name}},
                redis_client=self.client,
            )
            self._indexes[name] = index
        return ScopedIndex(folded_tag(tag), index, readings)

    def forget(self) -> None:
        """Ask again at the next search (an index was found gone)."""
        self._listed = None
        self._ready.clear()

    async def names(self) -> list[str]:
        """The namespace's scoped indexes, by name."""
        listed = await command(self.client, "FT._LIST")
        prefix = self.prefix()
        return sorted(n for n in (text(x) for x in listed) if n.startswith(prefix))

    async def forms(self) -> dict[str, list[str]]:
        """The forms of the tag each scoped index lists, by index name (its definition)."""
        out: dict[str, list[str]] = {}
        for name in await self.names():
            with contextlib.suppress(ResponseError):  # dropped meanwhile
                forms = _forms_of(await self._filter(name))
                if forms is not None:
                    out[name] = forms
        return out

    async def tags(self) -> dict[str, str]:
        """Each scoped index's tag (folded), by index name."""
        return {name: folded_tag(forms[0]) for name, forms in (await self.forms()).items()}

    async def create(self, vectors: AsyncSearchIndex, tag: str, seen: Iterable[str] = ()) -> str:
        """Create ``tag``'s index beside ``vectors``; it scans the hashes in the background.

        It lists the forms ``seen`` besides the folded one (:func:`tag_forms`).

        Returns:
            Its name.

        Raises:
            ValueError: the tag, or a form, is not :func:`scopable`.
        """
        forms = tag_forms(tag, seen)
        name = self.name(vectors, tag, forms)
        definition = IndexDefinition(  # type: ignore[no-untyped-call]
            prefix=[_index_part(vectors)["prefix"]],
            filter=tag_filter(forms),
            index_type=IndexType.HASH,
        )
        fields = [arg for field in vectors.schema.redis_fields for arg in field.redis_args()]
        try:
            await command(self.client, "FT.CREATE", name, *definition.args, "SCHEMA", *fields)
        except ResponseError as e:
            if "exists" not in str(e).lower():
                raise
        self.forget()
        return name

    async def drop(self, name: str) -> bool:
        """Drop one scoped index (never its hashes); ``False`` when it was gone."""
        if not name.startswith(self.prefix()):
            raise ValueError(f"{name!r} is not a scoped index of namespace {self.keys.ns!r}")
        try:
            await command(self.client, "FT.DROPINDEX", name)
        except ResponseError:
            return False
        finally:
            self.forget()
        return True

    async def sync(
        self, vectors: AsyncSearchIndex, reach: int, limit: int, *, dry_run: bool = False
    ) -> tuple[list[str], list[str]]:
        """Give the largest tags past ``reach`` an index each, and drop the others.

        Wanted: the :func:`scopable` tags more than ``reach`` memories carry (counted by
        ``memory:topics``, every form of a tag together), the largest first, at most
        ``limit``; not a tag some memory carries with a space at either end (written
        before tags were trimmed, which the tag filter matches and the expression would
        not). An index already there is kept while its tag has at least half of ``reach``
        and room is left, and made again when the tag's forms changed; any other scoped
        index (a smaller tag, an earlier schema's) is dropped.

        Returns:
            The names of the indexes created, and of those dropped (with ``dry_run``, what
            would be); names, never tags, so a report kept in Redis holds no tag.
        """
        counts: dict[str, float] = {}
        seen: dict[str, set[str]] = {}
        unclean: set[str] = set()
        async for member, score in self.client.zscan_iter(self.keys.memory_topics(), count=1000):
            form = text(member)
            tag = folded_tag(form.strip(" "))
            counts[tag] = counts.get(tag, 0.0) + _number(score)
            seen.setdefault(tag, set()).add(form)
            if form != form.strip(" ") or not scopable(form):
                unclean.add(tag)
        existing = await self.forms()
        have = {folded_tag(forms[0]) for forms in existing.values()}
        half = max(1, reach // 2)
        eligible = (t for t in counts if scopable(t) and t not in unclean and counts[t] >= half)
        ranked = sorted(eligible, key=lambda t: (-counts[t], t))
        keep = [t for t in ranked if counts[t] > reach or t in have][: max(0, limit)]
        wanted = {self.name(vectors, t, tag_forms(t, seen[t])): t for t in keep}
        create = [name for name in wanted if name not in existing]
        drop = [name for name in existing if name not in wanted]
        if not dry_run:
            for name in create:
                tag = wanted[name]
                await self.create(vectors, tag, seen[tag])
            for name in drop:
                await self.drop(name)
        return create, drop

    async def naming(self, needle: Needle) -> list[str]:
        """The scoped indexes a form of whose tag holds ``needle`` (definitions keep them)."""
        return [
            name
            for name, forms in (await self.forms()).items()
            if any(needle.in_text(form) for form in forms)
        ]

    async def drop_naming(self, needle: Needle) -> list[str]:
        """Drop the scoped indexes whose tag holds ``needle``; their names."""
        return [name for name in await self.naming(needle) if await self.drop(name)]

    async def _scanned(self, name: str) -> int | None:
        """The readings ``name`` holds once it has scanned its hashes, else ``None``."""
        info = await _info(self.client, name)
        if _number(info.get("indexing")):
            return None
        return int(_number(info.get("num_docs")))

    async def _filter(self, name: str) -> str:
        definition = (await _info(self.client, name)).get("index_definition") or {}
        return str(definition.get("filter", "")) if isinstance(definition, dict) else ""


class IndexState(TypedDict):
    """What :func:`index_state` reads of an index."""

    documents: int
    scanned: float
    memory_mb: float


async def index_state(client: Redis, name: str) -> IndexState | None:
    """What ``FT.INFO`` says of an index: ``documents``, ``scanned`` (0-1), ``memory_mb``.

    ``None`` when there is no such index.
    """
    try:
        fields = await _info(client, name)
    except ResponseError:
        return None
    scanned = 1.0 if not _number(fields.get("indexing")) else _number(fields.get("percent_indexed"))
    memory = sum(
        _number(fields.get(f))
        for f in (
            "inverted_sz_mb",
            "vector_index_sz_mb",
            "offset_vectors_sz_mb",
            "doc_table_size_mb",
        )
    )
    return {
        "documents": int(_number(fields.get("num_docs"))),
        "scanned": round(scanned, 3),
        "memory_mb": round(memory, 1),
    }


async def _info(client: Redis, name: str) -> dict[str, Any]:
    """``FT.INFO`` as redis-py reads it, its bytes decoded as redisvl's ``info`` does them.

    Raises:
        ResponseError: no such index.
    """
    info = await client.ft(name).info()  # type: ignore[no-untyped-call]
    return cast(dict[str, Any], convert_bytes(info))


def _number(value: object) -> float:
    """A number ``FT.INFO`` gives as bytes, text or a number (0 when absent)."""
    if isinstance(value, bytes | str):
        return float(value or 0)
    return float(value) if isinstance(value, int | float) else 0.0


def _index_part(vectors: AsyncSearchIndex) -> dict[str, str]:
    """The ``index`` part of ``vectors``' schema, its prefix as one string."""
    part = vectors.schema.to_dict()["index"]
    prefix = part["prefix"]
    return {**part, "prefix": prefix[0] if isinstance(prefix, list) else prefix}
