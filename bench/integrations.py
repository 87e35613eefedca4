"""The integrations' first write, with and without a running daemon; prints one JSON object.

An application opens ``Aether`` and makes its first ``AetherStore.aput`` (an indexed
item) and ``AetherSession.add_items`` (a remembered message) with the default local
embedding model. Without a daemon the model loads into the application's process;
with ``aether up`` running on the namespace the daemon's loaded model answers (it is
started, and waited for, before the clock starts). Each case is a fresh process, so a
model loaded by one never helps the next.

Usage: python bench/integrations.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROBE = """
import asyncio, json, sys, time
started = time.perf_counter()
from aether.app import Aether
from aether.config import Settings
from aether.integrations.langgraph import AetherStore
from aether.integrations.openai_agents import AetherSession

async def main():
    async with Aether.open(Settings()) as app:
        opened = time.perf_counter()
        await AetherStore(app).aput(("users", "u1"), "drink", {"text": "likes green tea"})
        stored = time.perf_counter()
        await AetherSession("s1", app).add_items([{"role": "user", "content": "hello there"}])
        done = time.perf_counter()
        served = getattr(app.memory.embedder.inner, "served_by_daemon", 0)
        print(json.dumps({
            "import_and_open_s": round(opened - started, 3),
            "first_store_put_s": round(stored - opened, 3),
            "first_session_add_s": round(done - stored, 3),
            "served_by_daemon": served,
        }))

asyncio.run(main())
"""


def _probe(env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300
    )
    if out.returncode != 0:
        raise SystemExit(out.stderr[-2000:])
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="aether-bench-integrations-"))
    base = {k: v for k, v in os.environ.items() if not k.startswith("AETHER_")}
    env = {**base, "AETHER_HOME": str(home), "AETHER_NAMESPACE": "apps"}
    without = _probe({**env, "AETHER_NAMESPACE": "alone"})
    daemon = subprocess.Popen(
        [sys.executable, "-m", "aether", "up"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 180
        while True:  # up: the model is loaded and the embedding service answers
            status = subprocess.run(
                [sys.executable, "-m", "aether", "status", "--json"],
                env=env,
                capture_output=True,
                text=True,
            )
            if status.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise SystemExit("the daemon did not come up")
            time.sleep(0.5)
        with_daemon = _probe(env)
    finally:
        daemon.terminate()
        daemon.wait(30)
        subprocess.run(
            [sys.executable, "-m", "aether", "redis", "stop"], env=env, capture_output=True
        )
    print(
        json.dumps(
            {"without_daemon": without, "with_daemon": with_daemon, "embedding": "local"},
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
