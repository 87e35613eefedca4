"""Print a Redis reply the way redis-cli does (for when no redis-cli binary exists)."""

from __future__ import annotations

from typing import Any


def format_reply(reply: Any, tty: bool) -> str:
    """Format like redis-cli: numbered and quoted on a terminal, raw lines otherwise."""
    if not tty:
        return "\n".join(_raw_lines(reply))
    return "\n".join(_tty_lines(reply, 0)) if reply not in ([], {}) else "(empty array)"


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", errors="backslashreplace") if isinstance(value, bytes) else value


def _raw_lines(reply: Any) -> list[str]:
    if reply is None:
        return [""]
    if isinstance(reply, dict):
        reply = [x for pair in reply.items() for x in pair]
    if isinstance(reply, list | tuple | set):
        return [line for item in reply for line in _raw_lines(item)]
    if isinstance(reply, bool):
        return [str(int(reply))]
    if isinstance(reply, bytes | str):
        return [_text(reply)]
    return [str(reply)]


def _tty_lines(reply: Any, depth: int) -> list[str]:
    if reply is None:
        return ["(nil)"]
    if isinstance(reply, dict):
        reply = [x for pair in reply.items() for x in pair]
    if isinstance(reply, list | tuple | set):
        items = list(reply)
        if not items:
            return ["(empty array)"]
        width = len(str(len(items)))
        lines: list[str] = []
        for n, item in enumerate(items, 1):
            head = f"{n:>{width}}) "
            sub = _tty_lines(item, depth + 1)
            lines.append(head + sub[0])
            lines.extend(" " * len(head) + s for s in sub[1:])
        return lines
    if isinstance(reply, bool | int):
        return [f"(integer) {int(reply)}"]
    if isinstance(reply, float):
        return [f'"{reply}"']
    if reply in ("OK", b"OK"):
        return ["OK"]
    return [_quoted(reply.encode() if isinstance(reply, str) else bytes(reply))]


_NAMED = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", 7: "\\a", 8: "\\b"}


def _quoted(value: bytes) -> str:
    r"""A string reply as redis-cli shows it on a terminal (its ``sdscatrepr``).

    Quoted; printable ASCII as it is; ``\n``-style names for five control characters;
    ``\xHH`` for every other byte, so binary values (the journal's msgpack fields) never
    reach the terminal raw.
    """
    out = []
    for byte in value:
        if byte in (ord("\\"), ord('"')):
            out.append("\\" + chr(byte))
        elif byte in _NAMED:
            out.append(_NAMED[byte])
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    return '"' + "".join(out) + '"'
