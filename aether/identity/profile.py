"""The identity in Redis: bootstrap (atomic), load (no filesystem), show and set fields.

All writes go through the journaled store, so a rollback restores an earlier identity,
and each is announced on ``ns:events``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from aether.codec import byte_map
from aether.errors import IdentityError
from aether.identity.bootstrap import (
    MAX_FIELD_BYTES,
    IdentitySource,
    check_timezone,
    load_directory,
)
from aether.identity.markdown import IdentityDoc, parse
from aether.store.checkpointer import Checkpointer
from aether.store.state import Mutation, Store

Target = Literal["agent", "user"]
_FIELD = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_READ_ONLY = {"created_at", "updated_at"}
# the profile schema: what each field means to aether (the system prompt reads them)
AGENT_FIELDS = {
    "name": "the agent's name",
    "emoji": "one emoji the agent signs with",
    "voice_style": "how the agent speaks",
    "autonomy_mode": "supervised (the default), autonomous or readonly: the tools' policy",
    "role": "what the agent is for",
}
USER_FIELDS = {
    "name": "the operator's name",
    "timezone": "an IANA time zone (Europe/Berlin, UTC): times in prompts and output",
    "projects": "what the operator works on",
    "priorities": "what matters most",
    "preferences": "how the operator likes answers",
}
EXTRA_PREFIX = "extra."
AUTONOMY_MODES = ("supervised", "autonomous", "readonly")
"""The agent's autonomy modes: the defaults of its tool policy (``aether.runtime.tools``)."""


def check_field(target: Target, name: str, value: str) -> None:
    """A field of the profile schema (or ``extra.NAME``) with a valid value.

    Raises:
        IdentityError: an unknown field (the message lists the known ones) or a bad value.
    """
    known = AGENT_FIELDS if target == "agent" else USER_FIELDS
    own = name.removeprefix(EXTRA_PREFIX)
    if name.startswith(EXTRA_PREFIX) and _FIELD.match(own):
        return
    if name not in known:
        raise IdentityError(
            f"unknown {target} field {name!r}: known fields are {', '.join(known)} "
            f"(or {EXTRA_PREFIX}NAME for one of your own)"
        )
    if name == "timezone":
        check_timezone(value)
    if name == "autonomy_mode" and value.strip().lower() not in AUTONOMY_MODES:
        raise IdentityError(f"autonomy_mode {value[:40]!r}: use one of {', '.join(AUTONOMY_MODES)}")


@dataclass(frozen=True)
class Identity:
    """The agent's identity as Redis holds it."""

    agent: dict[str, str]
    user: dict[str, str]
    files: dict[str, str] = field(default_factory=dict)

    def docs(self) -> list[IdentityDoc]:
        """The identity files, parsed (from Redis, not the filesystem)."""
        return [parse(name, text) for name, text in sorted(self.files.items())]


@dataclass(frozen=True)
class BootstrapResult:
    """What ``bootstrap`` wrote."""

    files: list[str]
    agent_fields: list[str]
    user_fields: list[str]
    replaced: bool
    checkpoint: str | None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _decode(raw: dict[bytes, bytes]) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in raw.items()}


class IdentityStore:
    """Reads and writes the identity of one namespace.

    Args:
        store: the journaled store.
        checkpoints: used to checkpoint before a forced re-bootstrap.
    """

    def __init__(self, store: Store, checkpoints: Checkpointer) -> None:
        self.store = store
        self.keys = store.keys
        self.client = store.client
        self.checkpoints = checkpoints

    async def is_bootstrapped(self) -> bool:
        """Whether an identity has been bootstrapped into Redis."""
        return await self.client.hget(self.keys.system_flags(), "bootstrapped") == b"1"

    async def bootstrap(
        self, directory: Path, *, force: bool = False, actor: str = "cli"
    ) -> BootstrapResult:
        """Load an identity directory into Redis: all files or none.

        Raises:
            IdentityError: the directory or a file is invalid (nothing written), or an
                identity exists and ``force`` is not set.
        """
        source = load_directory(directory)
        existed = await self.is_bootstrapped()
        if existed and not force:
            raise IdentityError(
                "an identity is already bootstrapped; pass --force to replace it "
                "(a checkpoint is taken first)"
            )
        checkpoint = None
        if existed:
            cp = await self.checkpoints.create(
                label=f"before identity bootstrap from {directory}",
                reason="pre-identity-bootstrap",
                actor=actor,
            )
            checkpoint = cp.id
        await self.store.apply(self._mutation(source, replace=existed), "identity.bootstrap", actor)
        await self._announce("identity.bootstrap", sorted(source.agent) + sorted(source.user))
        return BootstrapResult(
            files=[d.name for d in source.docs],
            agent_fields=sorted(source.agent),
            user_fields=sorted(source.user),
            replaced=existed,
            checkpoint=checkpoint,
        )

    def _mutation(self, source: IdentitySource, *, replace: bool) -> Mutation:
        now = _now()
        m = Mutation()
        if replace:
            for key in (
                self.keys.identity_files(),
                self.keys.identity_profile(),
                self.keys.user_profile(),
            ):
                m.delete(key)
        m.hset(self.keys.identity_files(), {d.name: d.text for d in source.docs})
        m.hset(self.keys.identity_profile(), {**source.agent, "created_at": now, "updated_at": now})
        m.hset(self.keys.user_profile(), {**source.user, "created_at": now, "updated_at": now})
        m.hset(self.keys.system_flags(), {"bootstrapped": "1", "bootstrapped_at": now})
        return m

    async def load(self) -> Identity:
        """The identity from Redis alone (no filesystem reads).

        Raises:
            IdentityError: no identity has been bootstrapped.
        """
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(self.keys.identity_profile())
        pipe.hgetall(self.keys.user_profile())
        pipe.hgetall(self.keys.identity_files())
        agent, user, files = await pipe.execute()
        if not agent:
            raise IdentityError("no identity in Redis: run 'aether identity bootstrap'")
        return Identity(_decode(byte_map(agent)), _decode(byte_map(user)), _decode(byte_map(files)))

    async def current(self, directory: Path) -> Identity:
        """The identity in Redis or, before any bootstrap, the one ``directory`` holds.

        A read: nothing is written (the daemon's first start bootstraps).

        Raises:
            IdentityError: nothing in Redis and the directory holds no valid identity.
        """
        if await self.is_bootstrapped():
            return await self.load()
        source = load_directory(directory)
        return Identity(
            dict(source.agent), dict(source.user), {d.name: d.text for d in source.docs}
        )

    async def ensure(self, directory: Path, actor: str = "aether") -> Identity:
        """First boot: bootstrap from ``directory``; later boots: Redis only."""
        if not await self.is_bootstrapped():
            await self.bootstrap(directory, actor=actor)
        return await self.load()

    async def set_field(self, target: Target, name: str, value: str, actor: str = "cli") -> None:
        """Set one field of the agent's or the operator's profile.

        Raises:
            IdentityError: unknown target, invalid or read-only field, empty or huge value,
                or no identity yet; nothing is written.
        """
        if target not in ("agent", "user"):
            raise IdentityError(f"target must be 'agent' or 'user', not {target!r}")
        if not _FIELD.match(name.removeprefix(EXTRA_PREFIX)):
            raise IdentityError(f"field {name!r} is not a lower-case identifier (a-z, 0-9, _)")
        if name in _READ_ONLY:
            raise IdentityError(f"{name} is maintained by aether and cannot be set")
        value = value.strip()  # stored as validated: "Europe/Berlin " is Europe/Berlin
        if not value:
            raise IdentityError("the value is empty")
        check_field(target, name, value)
        if len(value.encode()) > MAX_FIELD_BYTES:
            raise IdentityError(f"the value is over {MAX_FIELD_BYTES} bytes")
        if not await self.is_bootstrapped():
            raise IdentityError("no identity in Redis: run 'aether identity bootstrap'")
        key = self.keys.identity_profile() if target == "agent" else self.keys.user_profile()
        await self.store.apply(
            Mutation().hset(key, {name: value, "updated_at": _now()}),
            f"identity.set.{target}",
            actor,
        )
        await self._announce("identity.changed", [f"{target}.{name}"])

    async def _announce(self, kind: str, fields: list[str]) -> None:
        await self.client.publish(self.keys.events(), json.dumps({"type": kind, "fields": fields}))
