"""Read an identity directory: every ``AETHER*.md``, ``Core_Self.md`` and ``USER.md``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aether.errors import IdentityError
from aether.files import contain
from aether.identity.markdown import IdentityDoc, read_file

USER_FILE = "USER.md"
CORE_FILE = "Core_Self.md"


@dataclass(frozen=True)
class IdentitySource:
    """The parsed files of an identity directory, ready to be written at once."""

    docs: list[IdentityDoc]
    agent: dict[str, str]
    user: dict[str, str]


def default_identity_dir() -> Path:
    """The default identity shipped with aether (the repository's ``identity/``)."""
    package = Path(__file__).resolve().parents[1]  # the aether package
    for candidate in (package / "default_identity", package.parent / "identity"):
        if candidate.is_dir():
            return candidate
    raise IdentityError("no default identity directory found; pass one explicitly")


def check_timezone(value: str) -> str:
    """An IANA time zone name.

    Raises:
        IdentityError: the name is not in the time zone database.
    """
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise IdentityError(
            f"unknown time zone {value!r}: use an IANA name such as Europe/Berlin or UTC"
        ) from e
    return value


def _readable(directory: Path, path: Path) -> bool:
    """Whether ``path`` is a regular file inside ``directory`` (a link out is refused).

    Raises:
        IdentityError: the file is a symlink leaving the directory, or not a regular file.
    """
    if not path.exists() and not path.is_symlink():
        return False
    verdict = contain(directory, path)
    if verdict.reason == "outside_root":
        raise IdentityError(f"{path.name}: its real path leaves {directory}; nothing written")
    if verdict.reason == "not_regular":
        raise IdentityError(f"{path.name}: not a regular file; nothing written")
    return verdict.ok


MAX_FIELD_BYTES = 64 * 1024
"""The most one profile field may hold (front matter or ``identity set``)."""


def load_directory(directory: Path) -> IdentitySource:
    """Read and validate every identity file of ``directory``; nothing is written.

    Raises:
        IdentityError: a missing directory, no agent file, no agent name, or any bad file
            (empty, invalid UTF-8, over 1 MB, bad front matter, a front-matter value over
            :data:`MAX_FIELD_BYTES`); the message names it.
    """
    directory = directory.expanduser().absolute()  # a relative folder is the caller's
    if not directory.is_dir():
        raise IdentityError(f"identity directory {directory} does not exist")
    named = [*sorted(directory.glob("AETHER*.md")), directory / CORE_FILE]
    agent_paths = [p for p in named if _readable(directory, p)]
    if not agent_paths:
        raise IdentityError(f"{directory} holds no AETHER*.md or {CORE_FILE}")
    user_path = directory / USER_FILE
    paths = agent_paths + ([user_path] if _readable(directory, user_path) else [])
    docs = [read_file(p) for p in paths]
    for doc in docs:
        for key, value in doc.fields.items():
            size = len(str(value).encode())
            if size > MAX_FIELD_BYTES:
                raise IdentityError(
                    f"{doc.name}: front-matter field {key!r} holds {size:,} bytes, over the "
                    f"{MAX_FIELD_BYTES:,}-byte limit of a profile field; nothing written"
                )
    agent: dict[str, str] = {}
    origin: dict[str, str] = {}
    for doc in docs:
        if doc.name == USER_FILE:
            continue
        for key, value in doc.fields.items():
            if key in agent and agent[key] != value:
                raise IdentityError(
                    f"{doc.name}: {key!r} is {value!r} but {origin[key]} says {agent[key]!r}"
                )
            agent[key], origin[key] = value, doc.name
    if not agent.get("name"):
        raise IdentityError(
            f"no 'name' in the front matter of {', '.join(p.name for p in agent_paths)}"
        )
    user = next((d.fields for d in docs if d.name == USER_FILE), {})
    if user.get("timezone"):
        try:
            check_timezone(user["timezone"])
        except IdentityError as e:
            raise IdentityError(f"{USER_FILE}: {e}; nothing written") from e
    return IdentitySource(docs, agent, dict(user))
