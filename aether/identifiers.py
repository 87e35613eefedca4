"""Identifiers matched as whole tokens, in any of their spellings.

One matcher for everything that looks for a name or an identifier in stored text: erasure
(:class:`aether.store.redaction.Needle`), forgetting by subject, replacing, and the fact
rules that keep ``INV-7731`` and ``INV-7731B`` apart (:mod:`aether.memory.knowledge.facts`).

Two rules:

* **Whole tokens.** A spelling matches only where it starts and ends a token: ``INV-7731``
  never matches inside ``INV-7731B``, ``4410`` never inside ``44107``, ``lee@kiln.co``
  never inside ``bree@kiln.co`` nor ``lee@kiln.co.nz``. A token that goes on across a
  joining character (``.``, ``-``, ``_``, ``@``, ``+``, ``:``) followed by a letter or
  digit is a longer identifier, not this one.
* **Every spelling.** Text and spelling are compared folded: Unicode NFKC, case-folded,
  diacritics removed (``José`` is ``jose``), a leading ``@`` or ``#`` dropped (``@mira``
  is ``mira``). In a spelling that holds a digit (a phone, card, account number, a UUID,
  an invoice id) the separators (space, ``-``, ``.``, ``_``, ``/``, brackets) are
  optional and interchangeable: ``+351 912 345 678``, ``+351.912.345.678`` and
  ``+351912345678`` are one number, a UUID with hyphens is the UUID without. In words,
  any short run of punctuation or space stands for any other (``Mary-Jane`` /
  ``Mary Jane``), never for none (``Ada`` is not ``A da``... nor ``ada`` inside ``adam``).

A name in another script (``Ольга Иванова`` for ``Olga Ivanova``) is not a spelling that
folding finds: it is an alias, which the caller adds (the graph knows them).
"""

from __future__ import annotations

import itertools
import re
import sys
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

__all__ = [
    "IdentifierMatcher",
    "fold",
    "has_identifier",
    "identifiers_in",
    "skeleton",
]

SEPARATORS = " \t\n\r-._/()"
_SEP_CLASS = r"[\s\-._/()]"
_LETTERS = str.maketrans(
    {"ø": "o", "ł": "l", "đ": "d", "ħ": "h", "ı": "i", "ŀ": "l", "ß": "ss", "æ": "ae"}
    | {"œ": "oe", "þ": "th", "ð": "d", "ŧ": "t"}
)
"""Latin letters whose diacritic is not a combining mark (NFD leaves ``ø`` as it is)."""
_LETTER = re.compile("[" + "".join(map(chr, _LETTERS)) + "]")
"""Any of :data:`_LETTERS`: found by a regex, where ``str.translate`` would look up every
character of the text (a quarter of the time a binary file's 4 MB chunk took to fold)."""
_WORD_GAP = r"(?:[^\w@]|_){1,5}"
_JOINERS = r"[.\-_@+:]"
_ALNUM = r"[^\W_]"
_LEFT = rf"(?<!{_ALNUM})(?<!{_ALNUM}{_JOINERS})"
_RIGHT = rf"(?!{_ALNUM})(?!{_JOINERS}{_ALNUM})"
_TOKEN = re.compile(rf"{_ALNUM}+|@")
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|[nrt\"\\/])")
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "/": "/"}
_MARKS = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_PUNCTUATION = "".join(chr(c) for c in range(128) if not chr(c).isalnum() and chr(c) != "@")
_PUNCTUATION_BYTES = _PUNCTUATION.encode()
INTRA_TOKEN_MIN = 6
"""A digit-bearing token this long may be written with separators inside it (a phone)."""

# an identifier in prose: a token with a digit, an e-mail, a handle, a hashtag, a key
_IDENTIFIER = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # e-mail
    r"|(?<![\w@])[@#][A-Za-z_][\w.-]*\w"  # handle, hashtag
    r"|\+?\d[\d\s().-]{5,}\d"  # a phone or account number written in groups
    r"|(?<![\w-])(?=[\w.-]*\d)[A-Za-z0-9][\w.:-]*[A-Za-z0-9]"  # a token holding a digit
    r"|(?<![\w-])[a-z]+_[a-z0-9_]+"  # snake_case keys
)


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code.startswith("u"):
        return chr(int(code[1:], 16))
    return _SIMPLE_ESCAPES[code]


def fold(text: str) -> str:
    r"""``text`` as spellings are compared: NFKC, case-folded, without diacritics.

    JSON escapes (``\u00e9``, ``\n``) are read as the characters they stand for, so a
    stored JSON value and its text fold alike.
    """
    if "\\" in text:
        text = _ESCAPE.sub(_unescape, text)
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = _LETTER.sub(lambda m: str(_LETTERS[ord(m.group())]), folded)
    if folded.isascii():
        return folded
    return unicodedata.normalize("NFC", _MARKS.sub("", unicodedata.normalize("NFD", folded)))


def skeleton(spelling: str) -> str:
    """A spelling folded to its letters, digits and ``@`` (no leading ``@``/``#``/``+``)."""
    folded = fold(spelling).strip().lstrip("@#+")
    return "".join(c for c in folded if c.isalnum() or c == "@")


def has_identifier(text: str) -> bool:
    """Whether a text names an identifier (a token with a digit, an e-mail, a handle)."""
    return _IDENTIFIER.search(text) is not None


def identifiers_in(text: str) -> list[str]:
    """The identifiers a text names, folded to their skeletons, in order, once each."""
    found = [skeleton(m.group(0).rstrip(".,;:")) for m in _IDENTIFIER.finditer(text)]
    return list(dict.fromkeys(s for s in found if s))


@lru_cache(maxsize=512)
def _pattern(spelling: str) -> re.Pattern[str] | None:
    folded = fold(spelling).strip().strip("\"'`“”‘’«»").lstrip("@#+").strip()
    tokens = _TOKEN.findall(folded)
    words = [t for t in tokens if t != "@"]
    if not words:
        return None
    identifier = any(c.isdigit() for c in folded)
    parts: list[str] = []
    previous = ""
    for token in tokens:
        if token == "@":
            parts.append(rf"{_SEP_CLASS}*@{_SEP_CLASS}*")
            previous = "@"
            continue
        if parts and previous != "@":
            parts.append(f"{_SEP_CLASS}*" if identifier else _WORD_GAP)
        if identifier and any(c.isdigit() for c in token) and len(token) >= INTRA_TOKEN_MIN:
            parts.append(f"{_SEP_CLASS}{{0,3}}".join(re.escape(c) for c in token))
        else:
            parts.append(re.escape(token))
        previous = token
    return re.compile(_LEFT + "".join(parts) + _RIGHT)


class IdentifierMatcher:
    """Finds any of some spellings of one thing in texts (see the module docs).

    Args:
        spellings: the name or identifier and its aliases; blank ones are ignored.
    """

    def __init__(self, spellings: Iterable[str]) -> None:
        self.spellings = list(dict.fromkeys(s.strip() for s in spellings if s and s.strip()))
        patterns = [_pattern(s) for s in self.spellings]
        self.patterns = [p for p in patterns if p is not None]
        self.skeletons = sorted({skeleton(s) for s in self.spellings} - {""})
        self._ascii = all(s.isascii() for s in self.skeletons)
        self._skeleton_bytes = [s.encode() for s in self.skeletons]
        self._letters = frozenset("".join(self.skeletons))

    def __bool__(self) -> bool:
        return bool(self.patterns)

    @property
    def ascii_only(self) -> bool:
        """Whether every spelling folds to ASCII (its quick test then rules bytes out)."""
        return self._ascii

    def span(self, text: str) -> tuple[int, int] | None:
        """Where the first spelling is found in the folded ``text``, or ``None``."""
        folded = fold(text)
        if self._ascii and folded.isascii():
            compact = folded.translate(_DELETE_PUNCTUATION)
            if not any(s in compact for s in self.skeletons):
                return None
        best: tuple[int, int] | None = None
        for pattern in self.patterns:
            found = pattern.search(folded)
            if found is not None and (best is None or found.start() < best[0]):
                best = found.span()
        return best

    def in_text(self, text: str) -> bool:
        """Whether ``text`` names it in one of its spellings."""
        return self.span(text) is not None

    def maybe_in(self, blob: bytes) -> bool:
        """A quick test of raw bytes: ``False`` means no spelling can be in them.

        The bytes' letters and digits, as folding could leave them, must hold a spelling's
        skeleton: a binary value or a file chunk is ruled out without being folded whole.
        """
        if not self._ascii:
            return True
        if blob.isascii() and b"\\" not in blob:
            compact = blob.lower().translate(None, _PUNCTUATION_BYTES)
        else:
            compact = ascii_skeleton(blob, self._letters)
        return any(s in compact for s in self._skeleton_bytes)


_DELETE_PUNCTUATION = str.maketrans("", "", _PUNCTUATION)
_NOT_ASCII_OR_PUNCTUATION = _PUNCTUATION_BYTES + bytes(range(0x80, 0x100))
_ASCII_ALNUM = re.compile("[0-9a-z@]")
_BLOCK = 512


@lru_cache(maxsize=1)
def ascii_folds() -> tuple[re.Pattern[str], dict[str, str]]:
    """Every non-ASCII character whose fold holds ASCII letters, digits or ``@``, and those.

    ``Ａ`` -> ``a``, ``é`` -> ``e``, ``ﬁ`` -> ``fi``, ``K`` (Kelvin) -> ``k``: about two
    thousand characters. Computed once from :func:`fold` itself (a block of characters
    whose fold holds none is skipped whole), so it follows the Unicode data it runs on.
    The pattern finds those of the Basic Multilingual Plane and every astral character
    (looked up one by one, they are rare): a class listing astral characters one by one
    is tested range by range, fifteen times slower.
    """
    table: dict[str, str] = {}
    for start in range(0x80, sys.maxunicode + 1, _BLOCK):
        block = "".join(
            chr(c)
            for c in range(start, min(start + _BLOCK, sys.maxunicode + 1))
            if not 0xD800 <= c <= 0xDFFF
        )
        if _ASCII_ALNUM.search(fold(block)) is None:
            continue
        for char in block:
            if kept := "".join(_ASCII_ALNUM.findall(fold(char))):
                table[char] = kept
    basic = "".join(c for c in table if ord(c) <= 0xFFFF)
    return re.compile("[" + re.escape(basic) + "\U00010000-\U0010ffff]"), table


@lru_cache(maxsize=16)
def utf8_folds(
    letters: frozenset[str] | None = None,
) -> tuple[re.Pattern[bytes], dict[bytes, bytes]]:
    """:func:`ascii_folds` in UTF-8: a pattern of their encodings, and each one's letters.

    The pattern is a trie of the encodings' bytes (an alternation per leading byte, a class
    of last bytes at the end), so a chunk is read as bytes, never decoded: a valid encoding
    starts with a byte no other encoding continues with, so the pattern finds in raw bytes
    exactly the characters decoding them finds. Matched as a trie, a binary chunk is read
    half as fast again as by one branch per group of encodings.

    Args:
        letters: only the characters whose fold holds one of these (``None``: all).
    """
    _, table = ascii_folds()
    folded = {
        char.encode(): kept.encode()
        for char, kept in table.items()
        if letters is None or not letters.isdisjoint(kept)
    }
    if not folded:
        return re.compile(b"(?!)"), folded  # matches nothing
    return re.compile(_trie(sorted(folded))), folded


def _trie(encodings: list[bytes]) -> bytes:
    """A pattern matching exactly ``encodings`` (sorted, none a prefix of another)."""
    if all(len(e) == 1 for e in encodings):
        return b"[" + b"".join(re.escape(e) for e in encodings) + b"]"
    branches = [
        re.escape(bytes([head])) + _trie([e[1:] for e in group])
        for head, group in itertools.groupby(encodings, key=lambda e: e[0])
    ]
    return branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"


def ascii_skeleton(blob: bytes, letters: frozenset[str] | None = None) -> bytes:
    """The ASCII letters, digits and ``@`` that folding ``blob``'s text leaves, in order.

    Every character is folded on its own (:func:`utf8_folds`), other non-ASCII ones and
    punctuation dropped: a spelling :class:`IdentifierMatcher` finds in the folded text
    has its skeleton in this one, and a binary file's 4 MB chunk is read in a fraction of
    the time a whole fold takes. The bytes are never decoded (an escape is read as the
    character it stands for, then folded): what is left outside ASCII is bytes >= 0x80
    only, an invalid byte as much as a character that folds to nothing, deleted with
    punctuation. Decoding the chunk and folding its text took three times as long.

    Args:
        blob: the bytes.
        letters: when given, a character whose fold holds none of them is dropped
            instead of folded. A skeleton made of these letters is in this reading
            wherever it is in the whole one (what is dropped was none of its letters,
            and dropping it leaves it whole), and fewer characters are looked for.
    """
    if b"\\" in blob:
        blob = _ESCAPE_BYTES.sub(_unescape_bytes, blob)
    pattern, folded = utf8_folds(letters)
    blob = pattern.sub(lambda m: folded[m.group()], blob)
    return blob.lower().translate(None, _NOT_ASCII_OR_PUNCTUATION)


_ESCAPE_BYTES = re.compile(rb"\\(u[0-9a-fA-F]{4}|[nrt\"\\/])")


def _unescape_bytes(match: re.Match[bytes]) -> bytes:
    code = match.group(1).decode()
    char = chr(int(code[1:], 16)) if code.startswith("u") else _SIMPLE_ESCAPES[code]
    return char.encode("utf-8", "surrogatepass")
