"""Whole-process times of the commands an operator types, beside ``redis-cli PING``.

Each command runs as its own process (``python -m aether ...``, as the console script
does), several times; the median and the fastest are printed in seconds. The namespace is
new, in a temporary ``AETHER_HOME`` with the default settings (the local embedding model,
``appendfsync always``), and the daemon is up, so commands that embed ask its model.

- ``help``, ``status``, ``memory_log``, ``memory_search``, ``checkpoint_create``;
- ``rollback_3``: a rollback over 3 changes (3 ``memory log`` after a checkpoint), and
  ``undo``: its undo;
- ``mcp_initialize``: from starting ``aether mcp`` to its answer to ``initialize``;
- ``redis_stop``: ``aether redis stop`` (the daemon stopped first; restarted between runs);
- ``redis_cli_ping``: the floor, a process that only asks Redis;
- ``python_libraries_floor``: a Python process that only imports typer, structlog,
  redis.asyncio and pydantic-settings, what every command but ``--help`` stands on.

``load`` is the machine's load average when the run began and ended.

Usage: python bench/cli.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

AETHER = [sys.executable, "-m", "aether"]


def run(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    """Run one command; fail loudly if it fails."""
    done = subprocess.run(
        [*AETHER, *args], env=env, input=stdin, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise SystemExit(f"aether {' '.join(args)} failed: {done.stderr or done.stdout}")
    return done.stdout


def timed(
    work: Callable[[], Any], runs: int, before: Callable[[], Any] | None = None
) -> dict[str, float]:
    """Median and fastest of ``runs`` calls of ``work`` (``before`` runs untimed first)."""
    seconds = []
    for _ in range(runs):
        if before is not None:
            before()
        start = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - start)
    return {"median_s": round(statistics.median(seconds), 3), "min_s": round(min(seconds), 3)}


def start_daemon(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``aether up`` in the background, returned once ``status`` names it."""
    proc = subprocess.Popen(
        [*AETHER, "up"], env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done = subprocess.run(
            [*AETHER, "status", "--json"], env=env, capture_output=True, text=True
        )
        if done.returncode == 0 and json.loads(done.stdout)["daemon"]["pid"] == proc.pid:
            return proc
        if proc.poll() is not None:
            raise SystemExit("the daemon exited: " + log.read_text()[-2000:])
        time.sleep(0.3)
    raise SystemExit("the daemon did not come up: " + log.read_text()[-2000:])


def mcp_initialize(env: dict[str, str]) -> None:
    """Start ``aether mcp``, send ``initialize``, read the answer, close it."""
    proc = subprocess.Popen(
        [*AETHER, "mcp"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    proc.stdin.write((json.dumps(request) + "\n").encode())
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    if answer.get("id") != 1 or "result" not in answer:
        raise SystemExit(f"mcp initialize failed: {answer}")
    proc.stdin.close()
    proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="aether-bench-cli-"))
    env = {
        **os.environ,
        "AETHER_HOME": str(home),
        "AETHER_NAMESPACE": "benchcli",
        # a quiet daemon: a beat or maintenance between a rollback and its undo is a
        # change since the rollback, which undo refuses to discard
        "AETHER_DAEMON__HEARTBEAT_INTERVAL_S": "3600",
        "AETHER_DAEMON__MAINTENANCE_INTERVAL_S": "3600",
    }
    load_before = os.getloadavg()
    daemon: subprocess.Popen[bytes] | None = None
    results: dict[str, Any] = {}
    try:
        run(env, "redis", "start")
        url = json.loads(run(env, "--json", "redis", "url"))
        redis_cli = shutil.which("redis-cli")
        daemon = start_daemon(env, home / "daemon.log")
        for i in range(20):
            run(env, "memory", "log", f"the deploy of service {i} went out on Tuesday")
        if redis_cli:
            ping = [
                redis_cli,
                "-s",
                url["socket"],
                "--no-auth-warning",
                "-a",
                url["password"],
                "PING",
            ]
            results["redis_cli_ping"] = timed(
                lambda: subprocess.run(ping, capture_output=True, check=True), args.runs
            )
        # the libraries every command but --help stands on: the floor of a Python CLI here
        floor = [sys.executable, "-c", "import typer, structlog, redis.asyncio, pydantic_settings"]
        results["python_libraries_floor"] = timed(
            lambda: subprocess.run(floor, check=True), args.runs
        )
        results["help"] = timed(lambda: run(env, "--help"), args.runs)
        results["status"] = timed(lambda: run(env, "status"), args.runs)
        results["memory_log"] = timed(
            lambda: run(env, "memory", "log", "a note for the bench"), args.runs
        )
        results["memory_search"] = timed(
            lambda: run(env, "memory", "search", "when did the deploy go out"), args.runs
        )
        results["checkpoint_create"] = timed(lambda: run(env, "checkpoint", "create"), args.runs)
        rollbacks, undos = [], []
        for _ in range(args.runs):
            target = json.loads(run(env, "--json", "checkpoint", "create"))["id"]
            for n in range(3):
                run(env, "memory", "log", f"change {n}")
            back = ["checkpoint", "rollback", target, "--yes"]
            rollbacks.append(timed(lambda: run(env, *back), 1))  # noqa: B023 (called here)
            undos.append(timed(lambda: run(env, "checkpoint", "undo", "--yes"), 1))
        results["rollback_3"] = _merged(rollbacks)
        results["undo"] = _merged(undos)
        results["mcp_initialize"] = timed(lambda: mcp_initialize(env), args.runs)
        daemon.send_signal(signal.SIGINT)
        daemon.wait(timeout=60)
        daemon = None
        results["redis_stop"] = timed(
            lambda: run(env, "redis", "stop"), args.runs, before=lambda: run(env, "redis", "start")
        )
    finally:
        if daemon is not None:
            daemon.kill()
        subprocess.run([*AETHER, "redis", "stop"], env=env, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
    print(
        json.dumps(
            {
                "runs": args.runs,
                "python": sys.version.split()[0],
                "load": [round(x, 2) for x in (*load_before[:1], os.getloadavg()[0])],
                "seconds": results,
            },
            indent=2,
        )
    )


def _merged(runs: list[dict[str, float]]) -> dict[str, float]:
    medians = [r["median_s"] for r in runs]
    return {"median_s": round(statistics.median(medians), 3), "min_s": round(min(medians), 3)}


if __name__ == "__main__":
    main()
