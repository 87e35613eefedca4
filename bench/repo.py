"""Repository intelligence speed: index a repository (this one by default); prints JSON.

First index (every file read, hashed, parsed and written), then a re-index with nothing
changed (every file read and hashed, none parsed or written), then a re-index after one
file changed, each as files per second. Also: the time of ``deps``/``affected`` on the
most imported file.

Usage: python bench/repo.py [PATH]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aether.config import Settings
from aether.memory.code.repository import Repositories
from aether.memory.storage.layer import MemoryLayer
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect

HERE = Path(__file__).resolve().parent.parent


async def run(root: Path) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="aether-repo-"))
    settings = Settings(home=home, embedding={"provider": "none"}, namespace="bench")
    client = await connect(settings)
    try:
        repos = Repositories(MemoryLayer.open(settings, client))
        first = await repos.index(root)
        again = await repos.index(root)
        graph = await repos.graph(first.repo)
        hub = max(graph.importers, key=lambda p: len(graph.importers[p]))
        timings = []
        for _ in range(5):
            t = time.perf_counter()
            await repos.affected(root / hub)
            await repos.deps(root / hub)
            timings.append((time.perf_counter() - t) * 1000)
    finally:
        await client.aclose()
        EmbeddedRedis(settings).stop()
    return {
        "root": str(root),
        "files": first.files,
        "languages": first.languages,
        "index_s": first.seconds,
        "index_files_per_s": round(first.files / first.seconds, 1),
        "reindex_unchanged_s": again.seconds,
        "reindex_unchanged_files_per_s": round(again.files / again.seconds, 1),
        "import_edges": sum(len(v) for v in graph.imports.values()),
        "most_imported": hub,
        "deps_plus_affected_ms": round(statistics.median(timings), 1),
    }


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    print(json.dumps(asyncio.run(run(root)), indent=2))


if __name__ == "__main__":
    main()
