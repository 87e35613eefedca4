"""A local Redis Cluster from the embedded binaries, for tests, benches and trying it out.

``LocalCluster(directory).start()`` runs N primaries (redis-server 8 with the search and
JSON modules, ``cluster-enabled yes``) on free ports of 127.0.0.1, splits the 16,384 hash
slots evenly between them, joins them with ``CLUSTER MEET`` and waits for
``cluster_state:ok``; ``kill(port)`` and ``restart(port)`` play a crash and a
recovery; ``stop()`` kills them all. No replicas: it is a development cluster, not a
production layout.
"""

from __future__ import annotations

import contextlib
import os
import random
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from aether.errors import ServerError
from aether.server.binaries import find_binaries

SLOTS = 16_384
BUS_OFFSET = 10_000
"""A cluster node also listens on its port + 10,000 (the cluster bus)."""


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _run(node: redis.Redis, *args: object) -> Any:
    """One command on one node (redis-py's sync ``execute_command`` is untyped)."""
    return node.execute_command(*args)  # type: ignore[no-untyped-call]


def free_ports(count: int) -> list[int]:
    """``count`` ports whose cluster bus ports (+10,000) are free as well."""
    found: list[int] = []
    while len(found) < count:
        port = random.randint(20_000, 45_000)
        if port not in found and _free(port) and _free(port + BUS_OFFSET):
            found.append(port)
    return found


@dataclass
class LocalCluster:
    """N cluster primaries under ``directory`` (one folder per node)."""

    directory: Path
    primaries: int = 3
    password: str = field(default_factory=lambda: secrets.token_hex(16))
    ports: list[int] = field(default_factory=list)
    appendfsync: str = "everysec"
    """``always`` makes every acknowledged write survive a node's SIGKILL."""
    _clients: dict[int, redis.Redis] = field(default_factory=dict, repr=False)

    @property
    def url(self) -> str:
        """A URL of the first node (redis-py's cluster client discovers the others)."""
        return f"redis://:{self.password}@127.0.0.1:{self.ports[0]}"

    def node(self, port: int) -> redis.Redis:
        """A plain client of one node (one per node, reconnecting after a restart)."""
        if port not in self._clients:
            self._clients[port] = redis.Redis(port=port, password=self.password)
        return self._clients[port]

    def start(self, timeout_s: float = 30.0) -> LocalCluster:
        """Start the nodes and form the cluster.

        Raises:
            ServerError: a node did not start or the cluster did not become ok.
        """
        self.ports = free_ports(self.primaries)
        for port in self.ports:
            self._launch(port)
        deadline = time.monotonic() + timeout_s
        nodes = [self.node(port) for port in self.ports]
        for node in nodes:
            while True:
                try:
                    node.ping()
                    break
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise ServerError("a cluster node did not answer") from None
                    time.sleep(0.05)
        for i, node in enumerate(nodes):
            first, last = i * SLOTS // len(nodes), (i + 1) * SLOTS // len(nodes) - 1
            _run(node, "CLUSTER", "ADDSLOTSRANGE", first, last)
        for node in nodes[1:]:
            _run(node, "CLUSTER", "MEET", "127.0.0.1", self.ports[0])
        while not all(b"cluster_state:ok" in _run(n, "CLUSTER", "INFO") for n in nodes):
            if time.monotonic() > deadline:
                raise ServerError("the local cluster did not reach cluster_state:ok")
            time.sleep(0.1)
        while not all(len(_run(n, "CLUSTER", "NODES").splitlines()) == len(nodes) for n in nodes):
            if time.monotonic() > deadline:
                raise ServerError("the local cluster's nodes did not all meet")
            time.sleep(0.1)
        return self

    def _launch(self, port: int) -> None:
        """Start (or start again, on its files) the node on ``port``."""
        binaries = find_binaries()
        home = self.directory / str(port)
        home.mkdir(parents=True, exist_ok=True)
        args = [
            str(binaries.server),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(home),
            "--daemonize",
            "yes",
            "--pidfile",
            str(home / "redis.pid"),
            "--logfile",
            str(home / "redis.log"),
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--requirepass",
            self.password,
            "--masterauth",
            self.password,
            "--appendonly",
            "yes",
            "--appendfsync",
            self.appendfsync,
            "--save",
            "",
            "--loadmodule",
            str(binaries.search_module),
            "--loadmodule",
            str(binaries.json_module),
        ]
        done = subprocess.run(args, capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise ServerError(f"cluster node {port} did not start: {done.stderr[-500:]}")

    def kill(self, port: int) -> None:
        """SIGKILL one node (what a crash or the OOM killer does)."""
        pid = int((self.directory / str(port) / "redis.pid").read_text().strip())
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        raise ServerError(f"cluster node {port} did not die")

    def restart(self, port: int, timeout_s: float = 30.0) -> None:
        """Start a killed node again on its files; returns once the cluster is ok."""
        self._launch(port)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if all(
                    b"cluster_state:ok" in _run(self.node(p), "CLUSTER", "INFO") for p in self.ports
                ):
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise ServerError(f"the cluster was not ok after node {port} restarted")
            time.sleep(0.1)

    def owner(self, slot: int) -> int:
        """The port of the primary that serves ``slot``."""
        for first, last, primary, *_ in _run(self.node(self.ports[0]), "CLUSTER", "SLOTS"):
            if first <= slot <= last:
                return int(primary[1])
        raise ServerError(f"no node serves slot {slot}")

    def move_slot(self, slot: int, to_port: int, batch: int = 100) -> None:
        """Migrate ``slot`` with its keys to the primary at ``to_port`` (live, like reshard)."""
        source_port = self.owner(slot)
        if source_port == to_port:
            return
        source, target = self.node(source_port), self.node(to_port)
        source_id = _run(source, "CLUSTER", "MYID").decode()
        target_id = _run(target, "CLUSTER", "MYID").decode()
        _run(target, "CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        _run(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        while keys := _run(source, "CLUSTER", "GETKEYSINSLOT", slot, batch):
            _run(
                source,
                "MIGRATE",
                "127.0.0.1",
                to_port,
                "",
                0,
                5000,
                "AUTH",
                self.password,
                "KEYS",
                *keys,
            )
        for port in self.ports:
            _run(self.node(port), "CLUSTER", "SETSLOT", slot, "NODE", target_id)

    def stop(self) -> None:
        """Stop every node at once (SIGKILL: a development cluster keeps nothing)."""
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        for port in self.ports:
            with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
                pid = int((self.directory / str(port) / "redis.pid").read_text().strip())
                os.kill(pid, signal.SIGKILL)
