"""Journal entries (in Redis or archived) judged and redacted by a :class:`Redactor`.

An entry's ``i`` (the inverses) and ``f`` (the forward ops, while an archive follows) are
rewritten op by op; ``k`` (the keys touched) and ``d`` (their digests) lose any key whose
name holds the text or is named by it (:meth:`Redactor.names_it`).
"""

from __future__ import annotations

from typing import Any

import msgpack

from aether.store.redaction import Redactor
from aether.store.state import decode_ops

__all__ = ["entry_holds", "entry_names", "fields_hold", "redact_entry"]


async def redact_entry(redactor: Redactor, fields: dict[bytes, bytes]) -> dict[bytes, bytes] | None:
    """A journal entry's fields redacted; ``None`` when nothing changes."""
    out = dict(fields)
    changed = False
    for name in (b"i", b"f"):
        if name in fields:
            ops = await redactor.ops(decode_ops(fields[name]))
            if ops is not None:
                out[name] = msgpack.packb(ops, use_bin_type=False)
                changed = True
    for name, step in ((b"k", 1), (b"d", 2)):  # the keys touched; (key, digest) pairs
        if name in fields and redactor.needle is not None:
            kept = _keys_kept(redactor, fields[name], step)
            if kept is not None:
                out[name] = msgpack.packb(kept, use_bin_type=False)
                changed = True
    return out if changed else None


async def entry_holds(redactor: Redactor, fields: dict[bytes, bytes]) -> bool:
    """Whether a journal entry holds the redactor's text (pre-images decoded)."""
    for name in (b"i", b"f"):
        if name not in fields:
            continue
        ops = decode_ops(fields[name])
        if not redactor.may_hold_text(ops):  # most entries: one quick test
            continue
        for op in ops:
            if await _op_holds(redactor, op):
                return True
    return any(redactor.holds(fields.get(n, b"")) for n in (b"a", b"r", b"to", b"k"))


def _unpacked(packed: bytes) -> list[Any] | None:
    """A msgpacked list (an entry's ``k`` or ``d``), ``None`` when it is not one."""
    try:
        listed = msgpack.unpackb(packed, raw=True)
    except (ValueError, msgpack.UnpackException):
        return None
    return listed if isinstance(listed, list) else None


def _keys_kept(redactor: Redactor, packed: bytes, step: int) -> list[bytes] | None:
    """A packed list of keys (``step`` 2: key and digest pairs) less those the text names.

    ``None`` when none goes.
    """
    listed = _unpacked(packed)
    if redactor.needle is None or listed is None:
        return None
    if not redactor.may_name(b"\n".join(k for k in listed[::step] if isinstance(k, bytes))):
        return None  # most entries: one quick test of their keys together
    kept: list[bytes] = []
    for i in range(0, len(listed), step):
        key = listed[i]
        if not (isinstance(key, bytes) and redactor.names_key(key)):
            kept += listed[i : i + step]
    return kept if len(kept) != len(listed) else None


def entry_names(redactor: Redactor, fields: dict[bytes, bytes]) -> bool:
    """Whether a journal entry names a key named by the text (:meth:`Redactor.names_it`).

    An erasure leaves none: ``--verify`` reports an entry that still names one. The keys
    an entry touched are in ``k`` or ``d`` (its inverses touch no other); only an archived
    entry from before the chain has them in ``f`` alone, whose ops are then read.
    """
    listed = [_unpacked(fields[n]) or [] for n in (b"k", b"d") if n in fields]
    if listed:
        named = [k for keys in listed for k in keys if isinstance(k, bytes)]
        return redactor.may_name(b"\n".join(named)) and any(redactor.names_it(k) for k in named)
    if b"f" not in fields:
        return False
    return any(len(op) > 1 and redactor.names_it(op[1]) for op in decode_ops(fields[b"f"]))


async def _op_holds(redactor: Redactor, op: list[bytes]) -> bool:
    needle = redactor.needle
    if needle is None:
        return False
    vector = redactor.keys.is_vector(op[1].decode())
    for i, arg in enumerate(op[1:], start=1):
        if op[0] == b"RESTORE" and i == 2:
            # a vector's pre-image is binary: its text fields copy its document's
            if vector or not needle.maybe_in(arg):
                continue
            if redactor.value_holds(await redactor.decode(arg)):
                return True
        elif redactor.holds(arg):
            return True
    return False


def fields_hold(redactor: Redactor, fields: dict[bytes, bytes]) -> bool:
    """Whether a stream entry's fields hold the redactor's text."""
    return any(redactor.holds(k) or redactor.holds(v) for k, v in fields.items())
