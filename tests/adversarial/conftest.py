"""The adversarial suite's tools: the real CLI in-process, namespace images, counter checks.

Every case runs the real typer app (``AetherGroup.main``, the same path the console
script takes) against the session's embedded Redis, and asserts a clear error or correct
handling, no traceback, and, where it refuses, a namespace whose every key DUMPs the same
as before (the journal included: a refusal journals nothing).
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis
import structlog
from typer.testing import CliRunner

from aether.config import Settings
from aether.interfaces.cli import app
from aether.keys import Keyspace
from aether.memory.storage.layer import MemoryLayer
from aether.memory.tiers.memory_index import MemoryIndex
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect

# keys that legitimately change without a state write (presence, locks, caches)
VOLATILE = (b":daemon:alive", b":lock:", b":embcache:", b":rpc:")


@dataclass
class Outcome:
    """What one CLI call did."""

    code: int
    stdout: str
    stderr: str

    @property
    def text(self) -> str:
        """Everything printed."""
        return self.stdout + self.stderr


@dataclass
class Agent:
    """One namespace on the session's server, driven through the CLI."""

    home: Path
    namespace: str
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """The environment a CLI call of this agent runs with."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AETHER_")}
        env.update(
            {
                "AETHER_HOME": str(self.home),
                "AETHER_NAMESPACE": self.namespace,
                "AETHER_EMBEDDING__PROVIDER": "none",
                "AETHER_CONFIG_FILE": str(self.home / "no-such-config.toml"),
            }
        )
        env.update(self.extra_env)
        return env

    @property
    def settings(self) -> Settings:
        """The agent's settings (as the CLI builds them)."""
        return Settings(home=self.home, namespace=self.namespace, embedding={"provider": "none"})

    def __call__(self, *args: str, **env: str) -> Outcome:
        """Run ``aether ARGS`` in-process; no traceback may reach the output."""
        saved_config = structlog.get_config()
        saved_handlers = list(logging.getLogger().handlers)
        try:
            result = CliRunner().invoke(
                app, list(args), env={**self.env, **env}, catch_exceptions=True
            )
        finally:
            structlog.configure(**saved_config)
            logging.getLogger().handlers = saved_handlers
        outcome = Outcome(result.exit_code, result.stdout, result.stderr)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            f"aether {' '.join(args)} raised {result.exception!r}"
        )
        assert "Traceback" not in outcome.text, outcome.text
        return outcome

    def client(self) -> redis.Redis:
        """A synchronous client of the session's server."""
        return EmbeddedRedis(Settings(home=self.home)).endpoint().client()

    def image(self) -> dict[bytes, bytes]:
        """DUMP of every key of the namespace (journal included, volatile keys left out)."""
        prefix = Keyspace(self.namespace).prefix
        with self.client() as r:
            out: dict[bytes, bytes] = {}
            for key in r.scan_iter(match=f"{prefix}*", count=1000):
                if any(part in key for part in VOLATILE):
                    continue
                dumped = r.dump(key)
                if dumped is not None:
                    out[key] = dumped
            return out

    def counters_match(self) -> None:
        """Every memory counter equals a recount from the documents."""

        async def check() -> None:
            client = await connect(self.settings)
            try:
                index = MemoryIndex(MemoryLayer.open(self.settings, client))
                assert await index.counters() == await index.recount()
            finally:
                await client.aclose()

        asyncio.run(check())

    def refuses(self, *args: str, codes: tuple[int, ...] = (1, 64), **env: str) -> Outcome:
        """Run a call that must be refused: a clear error, an exit code, nothing changed."""
        before = self.image()
        outcome = self(*args, **env)
        assert outcome.code in codes, (outcome.code, outcome.text)
        message = outcome.stderr.strip() or outcome.stdout.strip()
        assert message, f"aether {' '.join(args)} refused without a word"
        assert len(message.splitlines()) <= 6, message  # one line, or click's usage block
        assert self.image() == before, f"aether {' '.join(args)} changed the namespace"
        self.counters_match()
        return outcome


def new_agent(home: Path, **extra_env: str) -> Agent:
    """A fresh namespace on the session's server."""
    return Agent(home, f"adv{uuid.uuid4().hex[:10]}", dict(extra_env))


@pytest.fixture(scope="module")
def seeded(redis_home: Path) -> Iterator[Agent]:
    """A namespace holding a little of everything; refused calls must leave it as it is."""
    agent = new_agent(redis_home)
    assert agent("memory", "log", "the kettle is broken", "--tag", "home").code == 0
    assert agent("memory", "log", "Caroline went to the support group").code == 0
    assert agent("memory", "longterm", "add", "the NAS has 12 TB", "--tag", "nas").code == 0
    assert agent("checkpoint", "create", "--label", "seed").code == 0
    assert agent("task", "add", "water the plants").code == 0
    assert agent("memory", "scratch", "set", "pad", "value").code == 0
    yield agent


@pytest.fixture
def fresh(redis_home: Path) -> Agent:
    """An empty namespace for cases that change state on purpose."""
    return new_agent(redis_home)
