"""Shared fixtures: one real embedded Redis per test session, a fresh namespace per test."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.config import Settings
from aether.keys import Keyspace
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect
from aether.store.state import Store
from aether.testing.image import state_image
from aether.testing.local_cluster import LocalCluster

PG_DSN = os.environ.get("AETHER_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def embedded_server(factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """Start an embedded server in a fresh AETHER_HOME; yield the home; stop it after.

    appendfsync always: every acknowledged write is fsync'd, so durable checkpoints
    return in ~1 ms instead of waiting for the once-a-second fsync of "everysec".
    """
    home = factory.mktemp(name)
    server = EmbeddedRedis(Settings(home=home, redis_appendfsync="always"))
    server.start()
    yield home
    server.stop()


@pytest.fixture(scope="session")
def redis_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """AETHER_HOME of the session's embedded server (started once, stopped at the end)."""
    yield from embedded_server(tmp_path_factory, "aether-home")


@pytest.fixture
def namespace() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def settings(redis_home: Path, namespace: str) -> Settings:
    return Settings(home=redis_home, namespace=namespace)


@pytest.fixture
def keys(namespace: str) -> Keyspace:
    return Keyspace(namespace)


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[Redis]:
    c = await connect(settings)
    yield c
    await c.aclose()


@pytest.fixture
def store(client: Redis, keys: Keyspace) -> Store:
    return Store(client, keys, actor="test")


@pytest.fixture
def checkpoints(client: Redis, keys: Keyspace) -> Checkpoints:
    return Checkpoints(client, keys, keep=50)


@pytest.fixture
def cli_env(redis_home: Path, namespace: str) -> dict[str, str]:
    """Environment for running the CLI against the session's server and namespace.

    Without the embedding model (full-text search): loading it costs each process
    seconds, and a command's behaviour does not depend on it. A test about semantic
    search asks for ``model_cli_env``.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("AETHER_")}
    env.update(
        {
            "AETHER_HOME": str(redis_home),
            "AETHER_NAMESPACE": namespace,
            "AETHER_EMBEDDING__PROVIDER": "none",
        }
    )
    return env


@pytest.fixture
def model_cli_env(cli_env: dict[str, str]) -> dict[str, str]:
    """:func:`cli_env` with the local embedding model (the default configuration)."""
    return {k: v for k, v in cli_env.items() if k != "AETHER_EMBEDDING__PROVIDER"}


dump_state = state_image  # the tests' name for the rollback contract's image


@contextlib.contextmanager
def _logging_kept() -> Iterator[None]:
    """Logging as it was before: a command configures it for its own (captured) streams."""
    import logging

    import structlog

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    config = structlog.get_config()
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)
        structlog.configure(**config)


def invoke_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``aether ARGS`` in this process (typer's runner): for tests of a command's
    behaviour, where a process costs a second of imports and checks nothing more.

    What must be a process (signals, the daemon, a dead Redis, what a person's shell
    sees) stays with :func:`run_cli`. The environment is exactly ``env`` for aether's
    settings (other ``AETHER_*`` variables are hidden); logging is restored afterwards.
    Call it from a thread without a running event loop (a command runs its own).
    """
    from typer.testing import CliRunner

    from aether.interfaces.cli import app

    hidden: dict[str, str | None] = {
        k: None for k in os.environ if k.startswith("AETHER_") and k not in env
    }
    with _logging_kept():
        result = CliRunner().invoke(app, list(args), env={**hidden, **env})
    return subprocess.CompletedProcess(
        ["aether", *args], result.exit_code, result.stdout, result.stderr
    )


def run_cli(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``aether ARGS`` as a person would: a subprocess, no stdin, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "aether", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


async def next_event(pubsub: object) -> dict[str, object] | None:
    """The next pub/sub message (subscribe confirmations skipped), or None within ~10 s."""
    for _ in range(20):
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.5)  # type: ignore[attr-defined]
        if message:
            return dict(message)
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Soaks first (the order is otherwise kept): the workers then finish together."""
    items.sort(key=lambda item: item.get_closest_marker("soak") is None)


def pytest_configure(config: pytest.Config) -> None:
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A 3-primary Redis Cluster from the embedded binaries, on free ports, for the session."""
    local = LocalCluster(tmp_path_factory.mktemp("cluster"), appendfsync="always").start()
    yield local
    local.stop()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
