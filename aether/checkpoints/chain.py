"""The journal's hash chain: verified against the live state, re-chained by an erasure.

Every journal entry carries ``p`` (its predecessor's hash), ``h`` (sha1 of ``p`` and its
other fields, each length-framed, in order) and ``d`` (the digest of each key it touched,
as it left it); ``store/journal.lua`` writes them in the step that applies the change, and
keeps every state key's digest and the head in one hash (``journal:digests``).

:meth:`JournalChain.verify` recomputes all of it and names each break:

- ``state-edited``: a state key whose content is not what the journal last left (an
  out-of-band write), ``state-unjournaled`` one the journal never wrote,
  ``state-deleted`` one the journal wrote that is gone;
- ``entry-forged``: an entry whose fields do not hash to its ``h`` (edited in place);
- ``chain-broken``: an entry whose ``p`` is not its predecessor's hash (one deleted in
  the middle, reordered or inserted);
- ``truncated``: the head names an entry that is not the last (entries deleted at the
  end), or the journal starts where no trim left it;
- ``digests-edited``: the digests kept beside the journal disagree with the chain;
- ``state-unsettled``: a long list a rollback changed and never came back to digest
  (while a rollback runs, such a list is not checked);
- with a signing key (:class:`~aether.store.signing.Signer`): ``unsigned``,
  ``bad-signature`` and ``unsigned-tail``, so a forger who recomputes the hashes but lacks
  the key is still found.

An erasure must change history: after it rewrites the journal's values it re-chains them
(:class:`Rechainer`) and records a redaction (who, when, how many entries, the old and
new head) that ``verify`` reports, so a redaction is told from a forgery by the record
and, with a key, by its signature.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import msgpack
from redis.asyncio import Redis

from aether.codec import byte_map, text
from aether.keys import Keyspace
from aether.store.chain_head import HEAD_FIELD, read_head, write_head
from aether.store.functions import Functions
from aether.store.signing import Signer, sign_head
from aether.store.streams import Fields, stream_pages

__all__ = [
    "GENESIS",
    "Break",
    "ChainReport",
    "JournalChain",
    "Rechainer",
    "entry_hash",
    "entry_hash_holds",
]

GENESIS = "0" * 40
"""The predecessor hash of a journal's first entry."""

_CHAIN = (b"p", b"h")
UNSETTLED = "~"
"""The digest a rollback step records for a long list it changed: its settling steps, at
the rollback's end and with writes still held, record the real one (``journal.lua``)."""
VERIFY_ATTEMPTS = 5
"""How many times a check runs while writes keep moving the head (the last is reported)."""
SIGNING_GRACE_S = 0.1
"""How long a check waits for a head's writer to sign it before checking again."""
_DIGEST_BATCH = 500


LONG_VALUE = 1024
"""A field value longer than this is framed by its sha1 in an entry's hash (``journal.lua``'s
``entry_framed``, library version 23 on); entries chained before hashed it whole."""


def _frame(value: bytes, long_by_digest: bool) -> bytes:
    if long_by_digest and len(value) > LONG_VALUE:
        return b"%d#%s" % (
            len(value),
            hashlib.sha1(value, usedforsecurity=False).hexdigest().encode(),
        )
    return b"%d:%s" % (len(value), value)


def _hash(prev: str, fields: Fields, long_by_digest: bool) -> str:
    body = b"".join(
        _frame(v, long_by_digest)
        for name, value in fields.items()
        if name not in _CHAIN
        for v in (name, value)
    )
    return hashlib.sha1(prev.encode() + body, usedforsecurity=False).hexdigest()


def entry_hash(prev: str, fields: Fields) -> str:
    """An entry's hash: sha1 of its predecessor's and its fields but ``p`` and ``h``.

    The same framing as ``journal.lua``'s ``entry_framed``: each value prefixed by its
    length and a ``:``, or, when longer than :data:`LONG_VALUE`, by its length and a ``#``
    and standing for its sha1.
    """
    return _hash(prev, fields, long_by_digest=True)


def entry_hash_holds(prev: str, fields: Fields, digest: str) -> bool:
    """Whether ``digest`` is the entry's hash, as chained now or as chained before.

    Journal library 22 and earlier framed long values whole. The two framings differ only
    where a value is long, and a string that frames validly both ways frames the same
    fields both ways, so accepting either lets no forgery through that one alone would not.
    """
    if entry_hash(prev, fields) == digest:
        return True
    long_values = any(len(v) > LONG_VALUE for k, v in fields.items() if k not in _CHAIN)
    return long_values and _hash(prev, fields, long_by_digest=False) == digest


@dataclass(frozen=True)
class Break:
    """One place the chain or the state is not what the journal says.

    Attributes:
        kind: ``state-edited``, ``state-unjournaled``, ``state-deleted``,
            ``state-unsettled`` (a rollback that left a list undigested never finished),
            ``entry-forged``, ``chain-broken``, ``truncated``, ``digests-edited``,
            ``unsigned``, ``bad-signature`` or ``unsigned-tail``.
        detail: what was found, in words.
        entry: the journal entry it concerns, if one.
        key: the state key it concerns, if one.
    """

    kind: str
    detail: str
    entry: str | None = None
    key: str | None = None


@dataclass
class ChainReport:
    """What :meth:`JournalChain.verify` found.

    Attributes:
        entries: chained entries checked.
        keys: live state keys checked.
        start: where the check began: ``genesis``, a checkpoint id, ``trim`` (a trimmed
            journal or a restored snapshot) or ``fork`` (a fork's first entry).
        head: the head's entry id (``None``: nothing journaled).
        legacy: entries written before the chain existed (not checked).
        signed: whether a signing key checked the head.
        redactions: the erasures that re-chained history, oldest first.
        breaks: every break, in journal order then key order.
    """

    entries: int = 0
    keys: int = 0
    start: str = "genesis"
    head: str | None = None
    legacy: int = 0
    signed: bool = False
    redactions: list[dict[str, Any]] = field(default_factory=list)
    breaks: list[Break] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No break."""
        return not self.breaks

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {**asdict(self), "ok": self.ok}


@dataclass
class _Walk:
    """The state of a walk down the journal."""

    expected: str | None
    last_id: str | None = None
    last_h: str | None = None
    digests: dict[str, str] = field(default_factory=dict)
    chained: bool = False


class JournalChain:
    """Verifies, anchors and re-heads one namespace's journal chain.

    Args:
        client: the namespace's client.
        keys: its keyspace.
        signer: the signing key, when the deployment has one.
    """

    def __init__(self, client: Redis, keys: Keyspace, signer: Signer | None = None) -> None:
        self.client = client
        self.keys = keys
        self.signer = signer

    async def head(self) -> tuple[str, str] | None:
        """The head: (entry id, hash), or ``None`` before the first chained entry."""
        return await read_head(self.client, self.keys)

    async def verify(
        self, start_pos: str | None = None, start_chain: str | None = None, label: str = ""
    ) -> ChainReport:
        """Recompute the chain from a start and the live state's digests against it.

        A write during the check (a running daemon) moves the head: the check runs again,
        so a report never mixes two states; so does a head not yet signed by its writer.

        Args:
            start_pos: check only the entries after this journal position (a checkpoint's).
            start_chain: the head hash recorded at ``start_pos``.
            label: how the report names the start.
        """
        for _attempt in range(VERIFY_ATTEMPTS - 1):
            before = await self.head()
            report = await self._verify_once(start_pos, start_chain, label)
            signing = any(b.kind == "unsigned-tail" for b in report.breaks)
            if await self.head() == before and not signing:
                return report
            if signing:  # its writer signs the head just after writing it
                await asyncio.sleep(SIGNING_GRACE_S)
        return await self._verify_once(start_pos, start_chain, label)

    async def _verify_once(
        self, start_pos: str | None, start_chain: str | None, label: str
    ) -> ChainReport:
        anchor = {
            text(k): text(v)
            for k, v in (await self.client.hgetall(self.keys.journal_anchor())).items()
        }
        report = ChainReport(start=label or ("checkpoint" if start_pos else "genesis"))
        report.redactions = json.loads(anchor.get("redactions", "[]"))
        walk = _Walk(expected=start_chain)

        async def walk_down() -> None:
            async for page in stream_pages(self.client, self.keys.journal()):
                for entry_id, fields in page:
                    if start_pos is None or not _le(entry_id, start_pos):
                        self._check_entry(entry_id, fields, walk, anchor, report)

        # the walk is this process's work, the digests Redis's: both at once
        _, live = await asyncio.gather(walk_down(), self._live_digests())
        await self._check_head(walk, anchor, report)
        await self._check_state(walk, live, report)
        if self.signer is not None:
            await self._check_signature(walk, report)
        return report

    def _check_entry(
        self,
        entry_id: str,
        fields: Fields,
        walk: _Walk,
        anchor: dict[str, str],
        report: ChainReport,
    ) -> None:
        if b"h" not in fields:
            if walk.chained:
                report.breaks.append(
                    Break("entry-forged", "an entry without the chain's fields", entry_id)
                )
            else:
                report.legacy += 1
            return
        prev, digest = text(fields.get(b"p", b"")), text(fields[b"h"])
        if walk.expected is None:  # the journal's first kept entry
            starts = {GENESIS, anchor.get("trimmed_to", GENESIS)}
            if prev not in starts:
                report.breaks.append(
                    Break("truncated", "the journal starts where no trim left it", entry_id)
                )
            elif prev != GENESIS:
                report.start = "fork" if "forked_from" in anchor else "trim"
        elif prev != walk.expected:
            report.breaks.append(
                Break(
                    "chain-broken",
                    "its predecessor hash is not the previous entry's: an entry was "
                    "deleted, reordered or inserted before it",
                    entry_id,
                )
            )
        if not entry_hash_holds(prev, fields, digest):
            report.breaks.append(
                Break("entry-forged", "its fields do not hash to its recorded hash", entry_id)
            )
        touched = msgpack.unpackb(fields.get(b"d", b"\x90"), raw=True)
        for i in range(0, len(touched) - 1, 2):
            walk.digests[text(touched[i])] = text(touched[i + 1])
        walk.expected, walk.last_id, walk.last_h, walk.chained = digest, entry_id, digest, True
        report.entries += 1

    async def _check_head(self, walk: _Walk, anchor: dict[str, str], report: ChainReport) -> None:
        head = await self.head()
        report.head = head[0] if head else None
        if head is None:
            if walk.chained:
                report.breaks.append(Break("truncated", "the chain's head is missing"))
            return
        if walk.last_id is None and (walk.expected or anchor.get("trimmed_to")) == head[1]:
            return  # nothing after the start (a checkpoint, a restored snapshot): its head
        if head != (walk.last_id, walk.last_h):
            report.breaks.append(
                Break(
                    "truncated",
                    f"the head names entry {head[0]}, the journal ends at {walk.last_id}: "
                    "entries were deleted at its end",
                    head[0],
                )
            )

    async def _live_digests(self) -> dict[str, str]:
        """Every live state key's content digest."""
        live = [
            text(raw)
            async for raw in self.client.scan_iter(match=self.keys.every_key, count=1000)
            if self.keys.is_state(text(raw))
        ]
        functions = Functions(self.client, self.keys)
        batches = [live[i : i + _DIGEST_BATCH] for i in range(0, len(live), _DIGEST_BATCH)]
        found: dict[str, str] = {}
        for batch in batches:
            found.update(zip(batch, await functions.digests(batch), strict=True))
        return {key: digest for key, digest in found.items() if digest}  # "": gone since

    async def _check_state(self, walk: _Walk, live: dict[str, str], report: ChainReport) -> None:
        kept = {
            text(k): text(v)
            for k, v in (await self.client.hgetall(self.keys.journal_digests())).items()
        }
        kept.pop(HEAD_FIELD, None)
        for key, digest in walk.digests.items():
            if kept.get(key, "") != digest:
                report.breaks.append(
                    Break("digests-edited", "the kept digest disagrees with the chain", key=key)
                )
        expected = {**kept, **walk.digests}
        rolling_back = bool(await self.client.exists(self.keys.write_hold()))
        for key in sorted(k for k, d in expected.items() if d == UNSETTLED):
            expected.pop(key)
            live.pop(key, None)
            if not rolling_back:
                report.breaks.append(
                    Break(
                        "state-unsettled",
                        "a rollback left it to be digested and never finished",
                        key=key,
                    )
                )
        for key, digest in live.items():
            want = expected.get(key, "")
            if not want:
                report.breaks.append(
                    Break("state-unjournaled", "a state key the journal never wrote", key=key)
                )
            elif want != digest:
                report.breaks.append(
                    Break("state-edited", "its content is not what the journal left", key=key)
                )
        report.keys = len(live)
        for key in sorted(k for k, d in expected.items() if d and k not in live):
            report.breaks.append(Break("state-deleted", "the journal left it, it is gone", key=key))

    async def _check_signature(self, walk: _Walk, report: ChainReport) -> None:
        assert self.signer is not None
        report.signed = True
        raw = {
            text(k): text(v)
            for k, v in (await self.client.hgetall(self.keys.journal_signature())).items()
        }
        if not raw:
            if walk.chained:
                report.breaks.append(Break("unsigned", "the chain's head was never signed"))
            return
        if not self.signer.verifies(raw.get("id", ""), raw.get("h", ""), raw.get("mac", "")):
            report.breaks.append(
                Break("bad-signature", "the signed head's signature does not match", raw.get("id"))
            )
        elif (raw["id"], raw["h"]) != (walk.last_id, walk.last_h):
            report.breaks.append(
                Break(
                    "unsigned-tail",
                    f"the last signed entry is {raw['id']}; the chain after it, or its "
                    "rewriting, was not signed by the key",
                    raw["id"],
                )
            )

    async def sign(self) -> None:
        """Sign the current head with the key (a no-op without one)."""
        if self.signer is not None:
            await sign_head(self.client, self.keys, self.signer)

    async def adopt(self) -> int:
        """A namespace written before the chain existed: record its state keys' digests once.

        Its later entries are chained; the state they did not touch is checked against
        this baseline. Concurrent writes are safe: a digest the chain already set is kept.
        Returns how many keys were adopted (0: the chain already covers the namespace).
        """
        if await self.client.exists(self.keys.journal_legacy_head(), self.keys.journal_digests()):
            return 0
        if not await self.client.exists(self.keys.journal()):
            return 0  # nothing was ever journaled: a fresh namespace
        live = await self._live_digests()
        if not live:
            return 0
        pipe = self.client.pipeline(transaction=False)
        for key, digest in live.items():
            pipe.hsetnx(self.keys.journal_digests(), key, digest)
        pipe.hset(self.keys.journal_anchor(), "adopted", str(time.time()))
        await pipe.execute()
        return len(live)

    async def rebase(self, restored: list[str], position: str, head_hash: str | None) -> None:
        """A namespace rebuilt from a base snapshot: the chain goes on from the snapshot's entry.

        Args:
            restored: the state keys the snapshot restored (their digests are recorded).
            position: the journal position the snapshot starts at.
            head_hash: the chain hash of the entry at ``position`` (``None``: unchained).
        """
        functions = Functions(self.client, self.keys)
        for i in range(0, len(restored), _DIGEST_BATCH):
            batch = restored[i : i + _DIGEST_BATCH]
            found = dict(zip(batch, await functions.digests(batch), strict=True))
            mapping = {key: digest for key, digest in found.items() if digest}
            if mapping:
                await self.client.hset(self.keys.journal_digests(), mapping=mapping)  # type: ignore[arg-type]
        if head_hash is not None:
            await self.client.hset(self.keys.journal_anchor(), "trimmed_to", head_hash)
            await write_head(self.client, self.keys, position, head_hash)

    async def fill_checkpoints(self) -> None:
        """Record each checkpoint's chain head from the entry at its position, where missing."""
        for raw in await self.client.zrange(self.keys.checkpoints(), 0, -1):
            key = self.keys.checkpoint(text(raw))
            if await self.client.hexists(key, "chain"):
                continue
            position = await self.client.hget(key, "journal_pos")
            if position is None or text(position) == "0-0":
                continue
            entry = await self.client.xrange(self.keys.journal(), min=position, max=position)
            fields = byte_map(entry[0][1]) if entry else {}
            if b"h" in fields:
                await self.client.hset(key, "chain", text(fields[b"h"]))

    async def anchor_trim(self, limit: str) -> None:
        """Record where the journal will start once trimmed to ``limit`` (``XTRIM MINID``).

        The first kept entry's predecessor hash, which no kept entry has.
        """
        first = await self.client.xrange(self.keys.journal(), min=limit, count=1)
        fields = byte_map(first[0][1]) if first else {}
        if b"p" in fields:
            prev = text(fields[b"p"])
            await self.client.hset(self.keys.journal_anchor(), "trimmed_to", prev)


def _le(a: str, b: str) -> bool:
    ams, _, aseq = a.partition("-")
    bms, _, bseq = b.partition("-")
    return (int(ams), int(aseq or 0)) <= (int(bms), int(bseq or 0))


class Rechainer:
    """Recomputes the chain over rewritten entries, in journal order (an erasure's rebuild).

    Feed every entry to :meth:`rechained` oldest first; then :meth:`finish` moves the head,
    the checkpoints' recorded heads and records the redaction.
    """

    def __init__(self, chain: JournalChain, why: str) -> None:
        self.chain = chain
        self.why = why
        self.prev: str | None = None
        self.renamed: dict[str, str] = {}
        self.rechained = 0
        self.last: tuple[str, str] | None = None

    def rechained_fields(self, fields: Fields) -> Fields:
        """``fields`` with ``p`` and ``h`` recomputed (the same object when unchanged)."""
        if b"h" not in fields:
            return fields
        prev = self.prev if self.prev is not None else text(fields.get(b"p", GENESIS.encode()))
        old = text(fields[b"h"])
        if text(fields.get(b"p", b"")) == prev and entry_hash_holds(prev, fields, old):
            self.prev = self.renamed[old] = old
            return fields
        digest = entry_hash(prev, fields)
        self.prev = digest
        self.renamed[old] = digest
        self.rechained += 1
        out = {k: v for k, v in fields.items() if k not in _CHAIN}
        out[b"p"], out[b"h"] = prev.encode(), digest.encode()
        return out

    async def finish(self, last_id: str | None) -> dict[str, Any] | None:
        """Move the head and the checkpoints' heads; record the redaction; sign."""
        if not self.rechained:
            return None
        client, keys = self.chain.client, self.chain.keys
        old = await self.chain.head()
        new_head = self.prev or GENESIS
        if last_id is not None:
            await write_head(client, keys, last_id, new_head)
        for raw in await client.zrange(keys.checkpoints(), 0, -1):
            key = keys.checkpoint(text(raw))
            recorded = await client.hget(key, "chain")
            if recorded is not None and text(recorded) in self.renamed:
                await client.hset(key, "chain", self.renamed[text(recorded)])
        record = {
            "why": self.why,
            "at": time.time(),
            "entries": self.rechained,
            "old_head": old[1] if old else None,
            "new_head": new_head,
        }
        anchor = keys.journal_anchor()
        done = json.loads(text(await client.hget(anchor, "redactions") or b"[]"))
        await client.hset(anchor, "redactions", json.dumps([*done, record]))
        await self.chain.sign()
        return record
