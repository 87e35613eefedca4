"""Journal entries (in Redis or archived) judged and redacted by a :class:`Redactor`.

An entry's ``i`` (the inverses) and ``f`` (the forward ops, while an archive follows) are
rewritten op by op; ``k`` (the keys touched) loses any key named after the text.
"""

from __future__ import annotations

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
    if b"k" in fields and redactor.needle is not None:
        touched = msgpack.unpackb(fields[b"k"], raw=True)
        if isinstance(touched, list):
            kept = [k for k in touched if not redactor.needle.in_value(k)]
            if len(kept) != len(touched):
                out[b"k"] = msgpack.packb(kept, use_bin_type=False)
                changed = True
    return out if changed else None


async def entry_holds(redactor: Redactor, fields: dict[bytes, bytes]) -> bool:
    """Whether a journal entry holds the redactor's text (pre-images decoded)."""
    for name in (b"i", b"f"):
        if name not in fields:
            continue
        for op in decode_ops(fields[name]):
            if await _op_holds(redactor, op):
                return True
    return any(redactor.holds(fields.get(n, b"")) for n in (b"a", b"r", b"to", b"k"))


def entry_names(redactor: Redactor, fields: dict[bytes, bytes]) -> bool:
    """Whether a journal entry names a key whose id is the text (:meth:`Redactor.names_it`).

    An erasure does not take such keys yet: ``--verify`` reports the entries that name them.
    The keys an entry touched are in ``k`` or ``d`` (its inverses touch no other); only an
    archived entry from before the chain has them in ``f`` alone, whose ops are then read.
    """
    listed = [fields[n] for n in (b"k", b"d") if n in fields]
    if listed:
        return any(redactor.names_in(packed) for packed in listed)
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
