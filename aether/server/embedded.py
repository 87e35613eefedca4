"""Lifecycle of the embedded Redis server: start (idempotent), stop, status.

Layout under ``$AETHER_HOME/redis``: ``redis.conf`` (rewritten at every start),
``password`` (0600, generated once), ``redis.pid``, ``redis.log`` and the AOF directory.
The unix socket lives in ``$AETHER_HOME/run`` (0700), or in a 0700 directory under the
system temp dir when that path would exceed the kernel's socket path limit.

Everything is owner-only: the home and its folders are 0700, and redis-server runs with
umask 077, so its AOF, RDB and log files are 0600 whatever the caller's umask. A home
left wider by an older version is tightened at start, with a logged notice.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import redis
import structlog
from redis.backoff import NoBackoff
from redis.retry import Retry

from aether.config import Settings
from aether.errors import ServerError
from aether.files import PRIVATE_UMASK, log_tightened, private_dir, tighten_home
from aether.server.binaries import find_binaries
from aether.server.chain_module import chain_module
from aether.server.compat import module_names

_SOCKET_PATH_MAX = 100
_START_TIMEOUT_S = 15.0
_STOP_TIMEOUT_S = 10.0

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Endpoint:
    """How to reach the embedded server."""

    unix_socket: Path
    password: str
    port: int | None

    def client(self, timeout: float = 5.0) -> redis.Redis:
        """A synchronous client (for lifecycle checks).

        It does not retry: a lifecycle check wants the server's answer now, and ``SHUTDOWN``
        closes the connection by design (redis-py's default retries slept 2 s on it).
        """
        return redis.Redis(
            unix_socket_path=str(self.unix_socket),
            password=self.password,
            socket_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
        )


@dataclass(frozen=True)
class ServerStatus:
    """What ``aether redis status`` reports."""

    running: bool
    pid: int | None
    endpoint: Endpoint
    data_dir: Path


class EmbeddedRedis:
    """The redis-server of one ``AETHER_HOME``.

    Args:
        settings: the effective settings (home, port, appendfsync).
    """

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self.data_dir = settings.redis_dir
        self.conf_path = self.data_dir / "redis.conf"
        self.pid_path = self.data_dir / "redis.pid"
        self.log_path = self.data_dir / "redis.log"
        self.password_path = self.data_dir / "password"

    @property
    def socket_path(self) -> Path:
        """Unix socket path, short enough for the kernel's limit."""
        preferred = self._settings.home / "run" / "redis.sock"
        if len(str(preferred)) <= _SOCKET_PATH_MAX:
            return preferred
        digest = hashlib.sha256(str(self._settings.home.resolve()).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"aether-{digest}" / "redis.sock"

    def endpoint(self) -> Endpoint:
        """The socket, password and optional TCP port (the password is created if new)."""
        return Endpoint(self.socket_path, self._password(), self._settings.redis_port)

    def _password(self) -> str:
        private_dir(self.data_dir)
        if not self.password_path.exists():
            fd = os.open(self.password_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(32))
        os.chmod(self.password_path, 0o600)
        return self.password_path.read_text().strip()

    def _written_pid(self) -> int | None:
        try:
            return int(self.pid_path.read_text().strip())
        except (OSError, ValueError):
            return None

    @staticmethod
    def _alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def _pid(self) -> int | None:
        pid = self._written_pid()
        return pid if pid is not None and self._alive(pid) else None

    def _exited(self) -> bool:
        """Whether the server wrote its pid and has since died.

        A half-written pidfile, seen while the server starts, is not an exit.
        """
        pid = self._written_pid()
        return pid is not None and not self._alive(pid)

    def _responds(self, endpoint: Endpoint) -> bool:
        if not endpoint.unix_socket.exists():
            return False
        try:
            with contextlib.closing(endpoint.client(timeout=1.0)) as c:
                return bool(c.ping())
        except redis.RedisError:
            return False

    def status(self) -> ServerStatus:
        """Whether the server runs and where."""
        endpoint = self.endpoint()
        pid = self._pid()
        return ServerStatus(
            running=pid is not None and self._responds(endpoint),
            pid=pid,
            endpoint=endpoint,
            data_dir=self.data_dir,
        )

    def chain_runs_in(self) -> str | None:
        """Where the running server computes the journal chain.

        Returns:
            ``"module"`` when the ``aether_chain`` module is loaded, ``"lua"`` when not,
            ``None`` when the server does not answer.
        """
        endpoint = self.endpoint()
        if not endpoint.unix_socket.exists():
            return None
        try:
            with contextlib.closing(endpoint.client(timeout=1.0)) as c:
                modules = c.module_list()
        except redis.RedisError:
            return None
        return "module" if "aether_chain" in module_names(modules) else "lua"

    @contextlib.contextmanager
    def _lifecycle_lock(self) -> Iterator[None]:
        private_dir(self.data_dir)
        fd = os.open(self.data_dir / "lifecycle.lock", os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "w") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)

    def _write_conf(self, endpoint: Endpoint, module: Path | None = None) -> None:
        binaries = find_binaries()
        private_dir(endpoint.unix_socket.parent)
        port = endpoint.port or 0
        lines = [
            f"dir {self.data_dir}",
            "daemonize yes",
            f"pidfile {self.pid_path}",
            f"logfile {self.log_path}",
            f"unixsocket {endpoint.unix_socket}",
            "unixsocketperm 700",
            f"port {port}",
            "bind 127.0.0.1",
            "protected-mode yes",
            f'requirepass "{endpoint.password}"',
            "appendonly yes",
            f"appendfsync {self._settings.redis_appendfsync}",
            'save ""',
            # strings stay as written in the AOF's RDB preamble and in DUMP payloads, so an
            # erasure can find (and prove gone) a text in every file and journaled image
            "rdbcompression no",
            # a memory's binary vector (1,536 bytes at 384-d float32) stays in a compact
            # listpack hash instead of a hash table (~460 bytes less per memory)
            "hash-max-listpack-value 2048",
            f"loadmodule {binaries.search_module}",
            f"loadmodule {binaries.json_module}",
        ]
        if module is not None:
            lines.append(f"loadmodule {module}")
        fd = os.open(self.conf_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("# written by aether at every start; edit AETHER_* settings instead\n")
            f.write("\n".join(lines) + "\n")

    def start(
        self, launcher: Sequence[str] = (), timeout: float = _START_TIMEOUT_S
    ) -> ServerStatus:
        """Start the server unless it already runs; return once it answers PING.

        Args:
            launcher: a command to run the server under, such as ``valgrind
                --tool=callgrind`` (``bench/checkpoints.py --instructions``); by default
                the server runs directly.
            timeout: how long to wait for it to answer, in seconds (a server under
                valgrind takes far longer than the default).

        Raises:
            ServerError: the server did not come up; the message holds its log's tail.
        """
        with self._lifecycle_lock():
            current = self.status()
            if current.running:
                return current
            endpoint = current.endpoint
            log_tightened(self._settings.home, tighten_home(self._settings.home))
            module = chain_module() if self._settings.redis_chain_module else None
            try:
                return self._launch(endpoint, module, launcher, timeout)
            except ServerError as e:
                if module is None:
                    raise
                # a module that built but does not load must not keep the server down
                log.warning("redis did not start with the chain module; without it", error=str(e))
                return self._launch(endpoint, None, launcher, timeout)

    def _launch(
        self, endpoint: Endpoint, module: Path | None, launcher: Sequence[str], timeout: float
    ) -> ServerStatus:
        """Write the configuration, run the server and wait until it answers."""
        self._write_conf(endpoint, module)
        # a crash (SIGKILL, power loss) leaves a stale pidfile and socket behind
        for stale in (endpoint.unix_socket, self.pid_path):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        binaries = find_binaries()
        proc = subprocess.run(
            [*launcher, str(binaries.server), str(self.conf_path)],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            umask=PRIVATE_UMASK,
        )
        if proc.returncode != 0:
            raise ServerError(
                f"redis-server failed to start (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()[-500:]}"
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._responds(endpoint):
                log.info("embedded redis started", socket=str(endpoint.unix_socket))
                return self.status()
            if self._exited():
                break
            time.sleep(0.05)
        raise ServerError(f"embedded redis did not come up: {self._log_tail()}")

    def stop(self, timeout: float = _STOP_TIMEOUT_S) -> bool:
        """Stop the server cleanly (AOF flushed). Returns whether one was running.

        Args:
            timeout: how long to wait for it to exit, in seconds.

        Raises:
            ServerError: the server did not exit within the timeout.
        """
        with self._lifecycle_lock():
            pid = self._pid()
            if pid is None:
                return False
            endpoint = self.endpoint()
            try:
                with contextlib.closing(endpoint.client()) as c:
                    c.shutdown()
            except redis.ConnectionError:
                pass  # SHUTDOWN closes the connection before replying
            except redis.RedisError:
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self._pid() is None:
                    log.info("embedded redis stopped")
                    return True
                time.sleep(0.05)
            raise ServerError(f"embedded redis (pid {pid}) did not stop: {self._log_tail()}")

    def _log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "no log written"
        return " | ".join(lines[-3:])
