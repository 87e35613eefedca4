"""Commands packed by hiredis: the asyncio client's own packer is pure Python.

redis-py's synchronous client packs commands with ``hiredis.pack_command`` when hiredis
is installed; its asyncio connections always use a Python loop that encodes every
argument on its own. A search sends a few hundred arguments (the keys a completion or a
document read names), so packing was the largest single cost in Python of a search
(``bench/memory.py``). :func:`pack_with_hiredis` gives a connection pool's connections the
same packer the synchronous client uses, with the same bytes on the wire and the same
``DataError`` for a value Redis cannot take.
"""

from __future__ import annotations

import sys
from typing import Any

import hiredis
from redis.asyncio.connection import AbstractConnection, ConnectionPool
from redis.exceptions import DataError

__all__ = ["pack_with_hiredis"]


class HiredisPacking:
    """Mixin for an asyncio connection class: ``pack_command`` in C."""

    def pack_command(self, *args: Any) -> list[bytes]:
        """One command in the Redis protocol (as redis-py's ``HiredisRespSerializer``)."""
        if isinstance(args[0], str):  # "CONFIG GET" names a command in two words
            args = tuple(args[0].encode().split()) + args[1:]
        elif b" " in args[0]:
            args = tuple(args[0].split()) + args[1:]
        if any(isinstance(arg, bytearray | memoryview) for arg in args):
            args = tuple(bytes(a) if isinstance(a, bytearray | memoryview) else a for a in args)
        try:
            return [hiredis.pack_command(args)]
        except TypeError:
            _, value, traceback = sys.exc_info()
            raise DataError(value).with_traceback(traceback) from None


_PACKED: dict[type[AbstractConnection], type[AbstractConnection]] = {}


def _packed(connection_class: type[AbstractConnection]) -> type[AbstractConnection]:
    """The connection class with :class:`HiredisPacking` mixed in (one per class)."""
    if issubclass(connection_class, HiredisPacking):
        return connection_class
    if connection_class not in _PACKED:
        name = f"Hiredis{connection_class.__name__}"
        _PACKED[connection_class] = type(name, (HiredisPacking, connection_class), {})
    return _PACKED[connection_class]


def pack_with_hiredis(pool: ConnectionPool) -> ConnectionPool:
    """``pool``, its future connections packing commands with hiredis; returns it."""
    pool.connection_class = _packed(pool.connection_class)
    return pool
