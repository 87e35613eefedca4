"""The identity file format: optional front matter of ``key: value`` lines, then markdown.

    ---
    name: Aether
    emoji: 🜁
    ---
    # Title
    ## Guardrails
    - one rule per bullet

Front matter keys are lower-case identifiers; values are single-line strings (a list is
written comma-separated). Body sections (``## Heading``) are kept verbatim; the system
prompt picks ``Guardrails``, ``Values`` and ``Heartbeat`` sections by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from aether.errors import IdentityError

MAX_FILE_BYTES = 1024 * 1024
_KEY = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_SECTION = re.compile(r"^##\s+(.+?)\s*$")


@dataclass(frozen=True)
class IdentityDoc:
    """One parsed identity file."""

    name: str
    text: str
    fields: dict[str, str] = field(default_factory=dict)
    sections: dict[str, str] = field(default_factory=dict)


def parse(name: str, text: str) -> IdentityDoc:
    """Parse an identity file's text.

    Raises:
        IdentityError: empty text or front matter that does not parse; names the file.
    """
    if not text.strip():
        raise IdentityError(f"{name}: the file is empty")
    lines = text.splitlines()
    fields: dict[str, str] = {}
    body_start = 0
    if lines and lines[0].strip() == "---":
        try:
            end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
        except StopIteration:
            raise IdentityError(f"{name}: front matter opened with '---' is never closed") from None
        for number, line in enumerate(lines[1:end], start=2):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, sep, value = line.partition(":")
            key = key.strip()
            if not sep or not _KEY.match(key):
                raise IdentityError(
                    f"{name}: line {number} of the front matter is not 'key: value' "
                    f"(keys are lower-case identifiers): {line.strip()[:80]!r}"
                )
            if key in fields:
                raise IdentityError(f"{name}: front matter key {key!r} appears twice")
            fields[key] = value.strip()
        body_start = end + 1
    return IdentityDoc(name, text, fields, _sections(lines[body_start:]))


def _sections(lines: list[str]) -> dict[str, str]:
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in lines:
        match = _SECTION.match(line)
        if match:
            current = match.group(1).strip().lower()
            sections.setdefault(current, [])
        elif current is not None:
            sections[current].append(line)
    return {name: "\n".join(body).strip() for name, body in sections.items()}


def read_file(path: Path) -> IdentityDoc:
    """Read and parse one identity file with the size and encoding checks.

    Raises:
        IdentityError: over 1 MB, invalid UTF-8, empty, or bad front matter.
    """
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise IdentityError(f"{path.name}: {size} bytes is over the 1 MB limit")
        raw = path.read_bytes()
    except OSError as e:
        raise IdentityError(f"{path.name}: cannot read: {e.strerror}") from e
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise IdentityError(f"{path.name}: not valid UTF-8 (byte {e.start})") from e
    return parse(path.name, text)
