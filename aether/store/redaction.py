"""Redaction: finding a text in stored values, and rewriting values so that it is gone.

An erasure (:mod:`aether.checkpoints.erasure`) first reads the whole history (the state,
the journal, the archive) and records in a :class:`Taint` which items ever held the text.
It then rewrites every value with a :class:`Redactor`: the state's keys, the journal's
forward and inverse ops, the archive's rows and base snapshots. The rewriting keeps the
history consistent, so that a rollback across the erasure restores everything else
exactly and the erased items not at all:

* a whole item (a JSON document, a string, an item hash: entity, relation, vector) that
  ever held the text is absent at every point of history: every op on its key becomes
  ``DEL``, and so do the keys that belong to it (its vectors, a belief's history, an
  entity's relation sets, the relations naming it);
* a field of a collection hash (one task of the task hash, one profile field) is dropped
  from every op and image where its value holds the text, and only there: a hash field is
  always written whole, so its other versions stay exactly as they were;
* a list element that holds it is replaced in place by :data:`TOMBSTONE`: a list is undone
  by position (``RPOP 1``), so its length never changes;
* a sorted-set or set member that holds it, or names an erased item, is dropped: those
  are undone member by member;
* a key named by it (a chat session, scratchpad or LangGraph thread called after the
  subject: :meth:`Redactor.names_it`) goes whole, and so does every op on it and every
  mention of its name in the journal: its name is the text.

Matching is by whole tokens in every spelling (:mod:`aether.identifiers`): erasing
``INV-7731`` leaves ``INV-7731B``, and finds ``inv 7731``; it also finds the text as JSON
escapes it. Binary values (vectors) never match, and neither does a match inside an id (a
ULID or a hex digest): it is never a whole token.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis

from aether.codec import text
from aether.errors import InvalidOperationError
from aether.identifiers import IdentifierMatcher
from aether.keys import Keyspace
from aether.store.values import Value, decode_image, decode_images, encode_value

__all__ = [
    "ALIAS_SEP",
    "ERASED_LABEL",
    "MAX_NEEDLE",
    "MIN_NEEDLE",
    "TOMBSTONE",
    "Needle",
    "Redactor",
    "Taint",
    "is_tombstone",
    "scrub_json",
]

ERASED_LABEL = "[erased]"
"""What a checkpoint label (or a string in a rollback record) that held the text becomes."""
TOMBSTONE = b'{"erased":true}'
"""What an erased list element becomes (lists keep their length; readers skip it)."""
MIN_NEEDLE = 3
MAX_NEEDLE = 1000
ALIAS_SEP = "\x1f"
"""Between the text and its aliases in a sealed erasure text."""


def scrub_json(value: Any, needle: Needle) -> Any:
    """A JSON value with every string that holds the needle replaced by ``[erased]``."""
    if isinstance(value, str):
        return ERASED_LABEL if needle.in_text(value) else value
    if isinstance(value, list):
        return [scrub_json(v, needle) for v in value]
    if isinstance(value, dict):
        return {k: scrub_json(v, needle) for k, v in value.items()}
    return value


def is_tombstone(raw: bytes | str) -> bool:
    """Whether a list element is an erased one."""
    return (raw.encode() if isinstance(raw, str) else raw) == TOMBSTONE


class Needle:
    """What an erasure looks for: a name or identifier in all its spellings.

    Matched as :class:`aether.identifiers.IdentifierMatcher` matches: whole tokens only
    (erasing ``INV-7731`` leaves ``INV-7731B``), in any case, with or without diacritics,
    separators or a leading ``@``/``#`` (a UUID with or without hyphens, a phone number
    with spaces or dots), and in any of ``aliases`` (the names the graph knows it by).

    Args:
        text: the text; surrounding space is ignored.
        aliases: other spellings of the same thing, erased with it.

    Raises:
        InvalidOperationError: shorter than 3 or longer than 1,000 characters, or nothing
            in it to match (only punctuation).
    """

    def __init__(self, text: str, aliases: Iterable[str] = ()) -> None:
        stripped = text.strip()
        if len(stripped) < MIN_NEEDLE:
            raise InvalidOperationError(
                f"the text to erase must be at least {MIN_NEEDLE} characters (a shorter one "
                "would match too much)"
            )
        if len(stripped) > MAX_NEEDLE:
            raise InvalidOperationError(f"the text to erase is at most {MAX_NEEDLE} characters")
        self.text = stripped
        self.aliases = [a.strip() for a in aliases if len(a.strip()) >= MIN_NEEDLE]
        self.matcher = IdentifierMatcher([stripped, *self.aliases])
        if not self.matcher:
            raise InvalidOperationError(
                f"{stripped!r} has no letters or digits to look for: name what to erase"
            )
        self.forms = self.matcher.spellings

    def sealed(self) -> str:
        """The text and its aliases as one string (:meth:`unsealed` reads it back)."""
        return ALIAS_SEP.join([self.text, *self.aliases])

    @classmethod
    def unsealed(cls, value: str) -> Needle:
        """The needle :meth:`sealed` wrote."""
        text_, *aliases = value.split(ALIAS_SEP)
        return cls(text_, aliases)

    def span(self, value: str) -> tuple[int, int] | None:
        """Where a spelling is found in the folded ``value`` (see :func:`fold`)."""
        return self.matcher.span(value)

    def in_text(self, value: str) -> bool:
        """Whether a text holds the needle (a whole token, in any spelling)."""
        return self.matcher.in_text(value)

    def in_value(self, value: bytes | str) -> bool:
        """Whether a stored value holds the needle; binary (non-UTF-8) values never do."""
        if isinstance(value, str):
            return self.in_text(value)
        if not self.matcher.maybe_in(value):
            return False
        try:
            decoded = value.decode()
        except UnicodeDecodeError:
            return False
        return self.in_text(decoded)

    def in_raw(self, blob: bytes) -> bool:
        """A quick test of raw bytes (a file chunk, a payload): ``False`` means no."""
        if not self.matcher.maybe_in(blob):
            return False
        return self.in_text(blob.decode("utf-8", "replace"))

    def maybe_in(self, payload: bytes) -> bool:
        """A quick test of a DUMP payload: ``False`` means it cannot hold the needle.

        A payload made while ``rdbcompression`` was on may hold LZF-compressed strings,
        marked by the byte 0xC3, where the text cannot be seen: those answer maybe (so do
        non-ASCII and binary values). The last 10 bytes (RDB version and CRC) are not part
        of the value.
        """
        body = payload[:-10]
        return b"\xc3" in body or self.matcher.maybe_in(body)


@dataclass
class Taint:
    """What an erasure removes beyond the values that hold the text: whole items.

    A JSON document is changed in place (``JSON.SET`` of one path, ``JSON.MERGE``), so a
    version without the text cannot be replayed once the one before it is gone: a
    document that ever held the text goes with its whole history.

    Attributes:
        keys: keys of whole items that ever held the text (or that were named).
        refs: item hash -> the ids its values name (a relation names its entities).
        texts: the exact texts of items erased by id (their embedding-cache entries go).
    """

    keys: set[str] = field(default_factory=set)
    refs: dict[str, set[str]] = field(default_factory=dict)
    texts: set[str] = field(default_factory=set)

    def close(self, keyspace: Keyspace) -> None:
        """Add what goes with the erased items.

        The memory an erased item indexes (:meth:`Keyspace.indexed_memory`), then the item
        hashes that name an erased item (a relation of an erased entity).
        """
        for key, named in self.refs.items():
            if key in self.keys:
                memories = (keyspace.indexed_memory(key, i) for i in named)
                self.keys.update(m for m in memories if m is not None)
        ids = self.ids(keyspace)
        for key, named in self.refs.items():
            if named & ids:
                self.keys.add(key)

    def ids(self, keyspace: Keyspace) -> set[str]:
        """The ids of the erased items (the last part of their keys)."""
        return {k.rsplit(":", 1)[-1] for k in self.keys if keyspace.owns(k)}

    def to_members(self) -> list[str]:
        """A flat form to keep in a Redis set (an interrupted erasure resumes from it)."""
        out = [f"k:{k}" for k in self.keys]
        out += [f"t:{t}" for t in self.texts]
        return out

    @classmethod
    def from_members(cls, members: Iterable[bytes | str]) -> Taint:
        """The taint :meth:`to_members` wrote."""
        taint = cls()
        for raw in members:
            member = text(raw)
            if member.startswith("k:"):
                taint.keys.add(member[2:])
            elif member.startswith("t:"):
                taint.texts.add(member[2:])
        return taint


_ID_TOKEN = re.compile(rb"[0-9A-Za-z]{16,}")
_IDS_LOOKED_FOR = 256
"""Up to this many erased items' ids, :meth:`Redactor.may_change` looks for each in a
pre-image's bytes (a substring search each); with more, an op with one is read on its own."""
_MARK_SPLIT = bytes.maketrans(b":#", b"\n\n")
_NAMING_OPS = (b"HSET", b"RESTORE")
"""The ops whose values an item hash names other items' ids in (:meth:`Redactor.observe`)."""


class Redactor:
    """Reads, judges and rewrites values for one erasure.

    Args:
        client: the namespace's client (payloads are decoded in a scratch key).
        keys: the namespace's keyspace.
        needle: the text, or ``None`` when erasing named items only.
        taint: what goes (complete once the scan is done).
    """

    def __init__(self, client: Redis, keys: Keyspace, needle: Needle | None, taint: Taint):
        self.client = client
        self.keys = keys
        self.needle = needle
        self.taint = taint
        self._ids: set[bytes] = set()  # the erased items' ids, as their tokens read
        self._images: dict[bytes, Value] = {}
        self._prefix = keys.prefix.encode()
        self._marks: tuple[set[bytes], set[str], int] = (set(), set(), -1)

    def refresh(self) -> None:
        """Take in the taint's current ids and marks (after the scan)."""
        self._ids = {i.encode() for i in self.taint.ids(self.keys)}
        gone = self.taint.keys
        self._marks = ({self.keys.item_mark(k).encode() for k in gone}, gone, len(gone))

    def may_be_gone(self, keys: list[bytes]) -> bool:
        """A quick test of many keys together: ``False`` means none is gone (:meth:`key_gone`).

        A key gone shares its mark with an erased item (:meth:`Keyspace.item_mark`), and
        a key's mark is one of the pieces its name splits into at ``:`` and ``#``: one
        split of the keys joined and one set intersection, where each key's owner cost
        microseconds of Python (two million ops in a million memories' journal).
        Before :meth:`refresh`, once the taint has grown since, or when a name holds a
        newline (the keys' separator), it answers maybe.
        """
        marks, of, size = self._marks
        if of is not self.taint.keys or size != len(of):  # the taint only grows
            return True
        joined = b"\n".join(keys)
        if joined.count(b"\n") != len(keys) - 1:
            return True  # a name with a newline of its own: its mark may span two pieces
        return not marks.isdisjoint(joined.translate(_MARK_SPLIT).split(b"\n"))

    # -- judging ---------------------------------------------------------------------
    def holds(self, value: bytes | str) -> bool:
        """Whether a value holds the needle."""
        return self.needle is not None and self.needle.in_value(value)

    def may_hold_document(self, raw: bytes) -> bool:
        r"""Whether a JSON document's raw text may hold the needle; ``False``: it cannot.

        The bytes are tested as :meth:`Needle.in_raw` tests them (escapes such as
        ``\u00e9`` read, every character folded). Without a needle (items erased by id)
        no document's content matters: it answers no. A document's key is judged apart
        (:meth:`observe_name`).
        """
        if self.needle is None:
            return False
        return self.needle.matcher.maybe_in(raw)

    def may_hold_documents(self, raws: list[bytes]) -> list[bool]:
        """:meth:`may_hold_document` for each of many documents, most ruled out together.

        The documents that are plain ASCII without an escape are tested joined, in one
        quick test (a spelling in one of them is in the joined bytes): at a million
        memories, a page's five hundred tests become one. The others, and all of them when
        the joined test answers maybe, are tested one by one.
        """
        if self.needle is None:
            return [False] * len(raws)
        plain = [raw.isascii() and b"\\" not in raw for raw in raws]
        joined = b"\n".join(raw for raw, p in zip(raws, plain, strict=True) if p)
        if joined and not self.needle.matcher.maybe_in(joined):
            return [
                not p and self.may_hold_document(raw) for raw, p in zip(raws, plain, strict=True)
            ]
        return [self.may_hold_document(raw) for raw in raws]

    def is_whole_item(self, key: str, kind: str) -> bool:
        """Whether a key of Redis type ``kind`` is one item, erased whole or left whole.

        Such a key is redacted only by going (:meth:`key_gone`): once the scan is done,
        one that is not gone stays exactly as it is.
        """
        return kind in ("ReJSON-RL", "string") or (kind == "hash" and self.keys.is_item_hash(key))

    def document_holds(self, document: Any) -> bool:
        """Whether a JSON document holds the needle (in any string, key or value)."""
        return self.holds(json.dumps(document, ensure_ascii=False))

    def is_erased_text(self, value: bytes | str) -> bool:
        """Whether a value is exactly the text of an item erased by id."""
        if not self.taint.texts:
            return False
        decoded = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        return decoded in self.taint.texts

    def names_erased(self, value: bytes | str) -> bool:
        """Whether a value (a member, a field) names an erased item's id."""
        if not self._ids:
            return False
        raw = value.encode() if isinstance(value, str) else value
        return not self._ids.isdisjoint(_ID_TOKEN.findall(raw))

    def names_it(self, key: bytes | str) -> bool:
        """Whether a key of the namespace is named by the text (a session, thread, pad...).

        The parts of its name chosen outside aether (:meth:`Keyspace.named_parts`) are
        read one by one: the matcher reads a token that goes on across ``:`` as one longer
        identifier, so ``…:chat:session:marta`` never holds ``marta`` as a whole token. Such
        a key goes whole, as an item that held the text does.
        """
        if isinstance(key, bytes):
            if not key.startswith(self._prefix):  # most fields and members: one test
                return False
            return self.may_name(key) and self._parts_named(key.decode("utf-8", "replace"))
        return self.may_name(key.encode()) and self._parts_named(key)

    def _parts_named(self, key: str) -> bool:
        """Whether a part of ``key``'s name a caller chose is the text (no quick test)."""
        needle = self.needle
        return needle is not None and any(needle.in_text(p) for p in self.keys.named_parts(key))

    def names_key(self, key: bytes | str) -> bool:
        """Whether a key's name holds the text, or the key is named by it (:meth:`names_it`)."""
        raw = key.encode() if isinstance(key, str) else key
        if not self.may_name(raw):  # one quick test for both readings
            return False
        if self.holds(key):
            return True
        return self._parts_named(key if isinstance(key, str) else key.decode("utf-8", "replace"))

    def may_name(self, raw: bytes) -> bool:
        """A quick test of key names, one or several joined: ``False`` rules them all out.

        ``False`` means no name holds the text and none is named by it. A part of a key's
        name is read percent-decoded (:meth:`Keyspace.named_parts`), so names with a ``%``
        answer maybe; the others are ruled out by the matcher's quick test of raw bytes
        (:meth:`~aether.identifiers.IdentifierMatcher.maybe_in`), which never says no to
        bytes whose text holds a spelling: a part of a name is a run of its bytes. An
        erasure meets every key of the namespace in the scan and every key an entry of the
        journal touched in its rebuild, and most are ruled out here (a name folded and split
        into parts cost about 15 µs).
        """
        if self.needle is None:
            return False
        return b"%" in raw or self.needle.matcher.maybe_in(raw)

    def key_gone(self, key: str) -> bool:
        """Whether a key is an erased item or belongs to one."""
        if key in self.taint.keys:
            return True
        owner = self.keys.owner(key)
        return owner is not None and owner in self.taint.keys

    def field_gone(self, name: bytes | str, value: bytes | None = None, key: str = "") -> bool:
        """Whether a field of a collection hash (``key``, when known) goes.

        It goes when its name or value holds the text, when it is named by a key the text
        names (a hash of keys), or when its name is made of names
        (:meth:`Keyspace.named_members`) and one of them is the text.
        """
        if self.holds(name) or (value is not None and self.holds(value)):
            return True
        return self.names_it(name) or self._names_part(key, name)

    def member_gone(self, member: bytes, key: str = "") -> bool:
        """Whether a member of ``key`` (a list, set or sorted set) goes.

        It goes when it holds the text, names an erased item or is a key named by the
        text, or when it is a name made of parts (:meth:`Keyspace.named_members`) and one
        of them is the text.
        """
        return self.names_erased(member) or self._member_holds(member, key)

    def _member_holds(self, member: bytes, key: str) -> bool:
        return self.holds(member) or self.names_it(member) or self._names_part(key, member)

    def _names_part(self, key: str, member: bytes | str) -> bool:
        needle = self.needle
        return needle is not None and any(
            needle.in_text(part) for part in self.keys.named_members(key, member)
        )

    def value_holds(self, value: Value, key: str = "") -> bool:
        """Whether a decoded value (of ``key``, when known) holds the needle anywhere."""
        content = value.content
        if value.type == "string":
            return self.holds(content)
        if value.type == "json":
            return self.document_holds(content)
        if value.type == "hash":
            return any(self.field_gone(f, v, key) for f, v in content.items())
        if value.type == "list":
            return any(self.holds(v) for v in content)
        if value.type in ("set", "zset"):
            return any(self._member_holds(v, key) for v in content)
        return False

    def whole_holds(self, key: str, value: Value) -> bool:
        """Whether a whole item's value holds the needle (a key read as a whole)."""
        whole = value.type in ("string", "json") or (
            value.type == "hash" and self.keys.is_item_hash(key)
        )
        return whole and self.value_holds(value)

    # -- scanning (phase 1) ------------------------------------------------------------
    def observe_name(self, key: str) -> bool:
        """Record ``key`` in the taint if its name holds the needle; whether it does."""
        if self.names_key(key):
            self.taint.keys.add(key)
            return True
        return False

    def observe(self, key: str, value: Value) -> None:
        """Record in the taint what a value of ``key`` shows (one version of it)."""
        if value.type == "hash" and self.keys.is_item_hash(key):
            named = {
                v.decode() for v in value.content.values() if _ID_TOKEN.fullmatch(v) is not None
            }
            if named:
                self.taint.refs.setdefault(key, set()).update(named)
        if self.observe_name(key):
            return
        if value.type == "hash" and not self.keys.is_item_hash(key):
            return  # a collection's fields are judged value by value
        if self.whole_holds(key, value):
            self.taint.keys.add(key)

    async def observe_ops(self, ops: list[list[bytes]]) -> None:
        """Record what the values of journaled ops show.

        The images (``RESTORE`` payloads) that may hold the text are decoded together, in
        a few round trips whatever their number (a base snapshot is one op per key).
        """
        if not self.may_hold_text(ops):  # then only the ids an item hash names are news
            item_hash = self.keys.is_item_hash
            ops = [op for op in ops if op[0] in _NAMING_OPS and item_hash(op[1].decode())]
        images: list[tuple[str, bytes]] = []
        for op in ops:
            cmd, key = op[0].decode(), op[1].decode()
            args = op[2:]
            if self.keys.is_vector(key):
                continue  # a vector goes with its document, never on its own content
            if self.observe_name(key) and not self.keys.is_item_hash(key):
                continue  # an item hash named by it is read still: what it indexes goes too
            if cmd == "RESTORE":
                may_hold = self.needle is not None and self.needle.maybe_in(args[0])
                may_name = self.keys.is_item_hash(key) and _ID_TOKEN.search(args[0])
                if may_hold or may_name:
                    images.append((key, args[0]))
            elif cmd == "HSET":
                pairs = {text(f): v for f, v in zip(args[::2], args[1::2], strict=False)}
                self.observe(key, Value("hash", pairs))
            elif (cmd == "SET" or cmd.startswith("JSON.")) and any(self.holds(a) for a in args):
                self.taint.keys.add(key)
        if images:
            decoded = await decode_images(self.client, self.keys, [p for _, p in images])
            for (key, _), value in zip(images, decoded, strict=True):
                self.observe(key, value)

    # -- values in Redis ---------------------------------------------------------------
    async def decode(self, payload: bytes) -> Value:
        """The value a DUMP payload holds."""
        return await decode_image(self.client, self.keys, payload)

    async def encode(self, value: Value) -> bytes:
        """A DUMP payload of a value."""
        return await encode_value(self.client, self.keys, value)

    def redact(self, key: str, value: Value) -> Value | None:
        """The value with what goes taken out; ``None`` when nothing of it stays.

        Returns the same object when nothing changes.
        """
        if self.key_gone(key):
            return None
        if self.keys.is_vector(key):
            return value  # a vector goes with its document, never on its own content
        kind, content = value.type, value.content
        if kind == "string":
            return None if self.holds(content) else value
        if kind == "json":
            return None if self.document_holds(content) else value
        if kind == "hash":
            if self.keys.is_item_hash(key):
                return None if self.whole_holds(key, value) else value
            kept = {f: v for f, v in content.items() if not self.field_gone(f, v, key)}
            if len(kept) == len(content):
                return value
            return Value(kind, kept) if kept else None
        if kind == "list":
            if not any(self.holds(v) for v in content):
                return value
            return Value(kind, [TOMBSTONE if self.holds(v) else v for v in content])
        if kind == "zset":
            scores = {m: sc for m, sc in content.items() if not self.member_gone(m, key)}
            if len(scores) == len(content):
                return value
            return Value(kind, scores) if scores else None
        if kind == "set":
            members = {m for m in content if not self.member_gone(m, key)}
            if len(members) == len(content):
                return value
            return Value(kind, members) if members else None
        return value

    def _must_decode(self, key: str, payload: bytes) -> bool:
        """Whether a pre-image of a key not gone must be decoded to be judged."""
        return not self.keys.is_vector(key) and self._payload_may_change(key, payload)

    def _payload_may_change(self, key: str, payload: bytes) -> bool:
        if self.needle is not None and self.needle.maybe_in(payload):
            return True
        return self._ids_in(payload)

    async def payload(self, key: str, payload: bytes) -> bytes | None:
        """A DUMP payload of ``key`` redacted; ``None`` when the key must be absent.

        Returns the same object when nothing changes (most payloads are not decoded).
        """
        if self.key_gone(key):
            return None
        value = self._images.get(payload)  # decoded ahead by :meth:`ops`: it must be read
        if value is None:
            if not self._must_decode(key, payload):
                return payload
            value = await self.decode(payload)
        redacted = self.redact(key, value)
        if redacted is None:
            return None
        if redacted is value:
            return payload
        return await self.encode(redacted)

    # -- journaled ops -----------------------------------------------------------------
    async def ops(self, ops: list[list[bytes]]) -> list[list[bytes]] | None:
        """Journaled ops redacted; ``None`` when none changes.

        Ops that cannot hold the text nor an erased item's id (:meth:`may_change`, most of
        a journal) are not read one by one: only those on keys gone change. The pre-images
        that must be read are decoded together first (a few round trips for a rollback's
        thousands of ``RESTORE`` ops, not one scratch key each).
        """
        if not self.may_change(ops):
            return self._gone_keys_deleted(ops)
        wanted = [op[2] for op in ops if self._image_read(op)]
        if wanted:
            decoded = await decode_images(self.client, self.keys, wanted)
            self._images = dict(zip(wanted, decoded, strict=True))
        try:
            out: list[list[bytes]] = []
            changed = False
            for op in ops:
                new = await self.op(op)
                if len(new) != 1 or new[0] is not op:
                    changed = True
                out.extend(new)
            return out if changed else None
        finally:
            self._images = {}

    def _gone_keys_deleted(self, ops: list[list[bytes]]) -> list[list[bytes]] | None:
        """``ops`` with each op on a key gone a ``DEL`` of it (:meth:`op` for them)."""
        if not self.may_be_gone([op[1] for op in ops]):
            return None
        out = [
            [b"DEL", op[1]] if op[0] != b"ABSENT" and self.key_gone(op[1].decode()) else op
            for op in ops
        ]
        return out if any(new is not op for new, op in zip(out, ops, strict=True)) else None

    def may_change(self, ops: list[list[bytes]]) -> bool:
        """A quick test of ops: ``False`` means none changes but those on keys gone.

        What :meth:`op` reads beyond the key's taint is text (:meth:`may_hold_text`) or an
        erased item's id: in a key or value, a whole token (:meth:`names_erased`), found
        once for all the ops' parts joined; in a pre-image (binary), anywhere in it. With
        more ids than are quickly looked for, an op with a pre-image answers maybe.
        """
        if self.may_hold_text(ops):
            return True
        if not self._ids:
            return False
        vector = self.keys.is_vector
        parts: list[bytes] = []
        for op in ops:
            if op[0] == b"RESTORE" and len(op) > 2:
                if not vector(op[1].decode()) and self._image_names_erased(op[2]):
                    return True
                parts.append(op[1])
                parts.extend(op[3:])
            else:
                parts.extend(op[1:])
        return self.names_erased(b"\n".join(parts))

    def _image_names_erased(self, payload: bytes) -> bool:
        return len(self._ids) > _IDS_LOOKED_FOR or self._ids_in(payload)

    def _ids_in(self, payload: bytes) -> bool:
        """Whether an erased id is anywhere in binary bytes (a substring search each)."""
        return any(i in payload for i in self._ids)

    def may_hold_text(self, ops: list[list[bytes]]) -> bool:
        """A quick test of ops: ``False`` means no key, value or pre-image holds the text.

        The keys and values are tested together (:meth:`may_name`), each pre-image on its
        own as :meth:`payload` tests it (a vector's never: it goes with its document).
        """
        if self.needle is None:
            return False
        texts: list[bytes] = []
        for op in ops:
            if op[0] == b"RESTORE" and len(op) > 2:
                texts.append(op[1])
                if not self.keys.is_vector(op[1].decode()) and self.needle.maybe_in(op[2]):
                    return True
            else:
                texts.extend(op[1:])
        return self.may_name(b"\n".join(texts))

    def _image_read(self, op: list[bytes]) -> bool:
        """Whether :meth:`payload` will decode this op's pre-image."""
        if op[0] != b"RESTORE" or len(op) < 3:
            return False
        key = op[1].decode()
        return not self.key_gone(key) and self._must_decode(key, op[2])

    async def op(self, op: list[bytes]) -> list[list[bytes]]:
        """One op redacted: the op itself, its rewrite, ``DEL`` of its key, or nothing.

        An op on a key named by the text goes with its key's name: the key is absent at
        every point of history, so no op on it need be kept to keep it absent.
        """
        cmd, key, args = op[0].decode(), op[1].decode(), op[2:]
        if self.names_it(key):
            return []  # its name is the text: not even a DEL of it stays
        if cmd == "ABSENT":
            return [op]
        gone: list[list[bytes]] = [[b"DEL", op[1]]]
        if self.key_gone(key):
            return gone
        if cmd == "RESTORE":
            new = await self.payload(key, args[0])
            if new is None:
                return gone
            return [op] if new is args[0] else [[op[0], op[1], new, *args[1:]]]
        if cmd == "SET" or cmd.startswith("JSON."):
            return gone if any(self.holds(a) for a in args) else [op]
        if cmd == "HSET":
            if self.keys.is_item_hash(key):
                return gone if any(self.holds(a) for a in args) else [op]
            pairs = [
                (f, v)
                for f, v in zip(args[::2], args[1::2], strict=False)
                if not self.field_gone(f, v, key)
            ]
            return self._rebuilt(op, [x for pair in pairs for x in pair], len(args) // 2, pairs)
        if cmd == "HDEL":
            kept = [f for f in args if not self.field_gone(f, key=key)]
            return self._rebuilt(op, kept, len(args), kept)
        if cmd in ("HINCRBY", "HINCRBYFLOAT"):
            return [] if self.field_gone(args[0], key=key) else [op]
        if cmd in ("RPUSH", "LPUSH"):
            return self._tombstoned(op, 2)
        if cmd == "RPUSHCAP":
            return self._tombstoned(op, 3)
        if cmd == "ZADD":
            first = 1 if args and args[0] == b"GT" else 0
            flags, rest = args[:first], args[first:]
            pairs = [
                (s, m)
                for s, m in zip(rest[::2], rest[1::2], strict=False)
                if not self.member_gone(m, key)
            ]
            return self._rebuilt(
                op, [*flags, *(x for pair in pairs for x in pair)], len(rest) // 2, pairs
            )
        if cmd in ("ZREM", "SADD", "SREM"):
            kept = [m for m in args if not self.member_gone(m, key)]
            return self._rebuilt(op, kept, len(args), kept)
        if cmd == "ZINCRBY":
            return [] if self.member_gone(args[1], key) else [op]
        return [op]

    @staticmethod
    def _rebuilt(
        op: list[bytes], new_args: list[bytes], before: int, kept: list[Any]
    ) -> list[list[bytes]]:
        if len(kept) == before:
            return [op]
        return [[op[0], op[1], *new_args]] if kept else []

    def _tombstoned(self, op: list[bytes], first_value: int) -> list[list[bytes]]:
        values = op[first_value:]
        if not any(self.holds(v) for v in values):
            return [op]
        return [[*op[:first_value], *(TOMBSTONE if self.holds(v) else v for v in values)]]
