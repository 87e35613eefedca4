"""The ``aether_chain`` Redis module: the journal chain's per-write work in C.

A write's hash chain (decision 0007) cost most of a write's time inside Redis in Lua:
SHA-1 in plain C reached through ``redis.sha1hex``, strings interned and collected, a
``redis.call`` per command. ``aether_chain.c`` does that work in one command,
``AETHER.CHAIN``, which ``journal.lua`` calls when the server has it; the entries it
writes are the Lua library's, byte for byte, and it replicates plain commands, so data
files never need it.

The embedded server loads it when it can be built: from its C source here, once per
machine and source (the C compiler ``$CC`` or ``cc``, OpenSSL's ``libcrypto``), into a
private cache folder. Without a compiler, or with a build or load that fails, the server
runs the Lua path, as any Redis Stack server does.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import structlog

from aether.files import private_dir

__all__ = ["SOURCE", "chain_module"]

log = structlog.get_logger(__name__)

SOURCE = Path(__file__).with_name("aether_chain.c")
FLAGS = ("-O2", "-shared", "-fPIC")
LIBS = ("-lcrypto",)
BUILD_TIMEOUT_S = 120.0


def _cache_dir() -> Path:
    """A private folder for built modules: the user's cache, else the temp dir's."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    for root in (Path(base) / "aether", Path(tempfile.gettempdir()) / f"aether-{os.getuid()}"):
        with contextlib.suppress(OSError):
            folder = private_dir(root / "modules")
            if folder.stat().st_uid == os.getuid() and os.access(folder, os.W_OK):
                return folder
    raise OSError("no writable cache folder for the chain module")


@functools.cache
def chain_module() -> Path | None:
    """The built module's path, building it the first time; ``None`` when it cannot be.

    The file is named by a digest of the source, the compiler and its flags, so a changed
    source builds anew; concurrent builders wait on a lock and the file appears whole.
    """
    compiler = shutil.which(os.environ.get("CC") or "cc")
    if compiler is None:
        log.info("no C compiler: the journal chain runs in Lua")
        return None
    try:
        source = SOURCE.read_bytes()
        tag = hashlib.sha256(b"\0".join([source, compiler.encode(), *map(str.encode, FLAGS)]))
        folder = _cache_dir()
        target = folder / f"aether_chain-{tag.hexdigest()[:16]}.so"
        if target.is_file():
            return target
        with open(folder / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if target.is_file():
                return target
            partial = folder / f".{target.name}.{os.getpid()}"
            proc = subprocess.run(
                [compiler, *FLAGS, "-o", str(partial), str(SOURCE), *LIBS],
                capture_output=True,
                text=True,
                check=False,
                timeout=BUILD_TIMEOUT_S,
            )
            if proc.returncode != 0:
                partial.unlink(missing_ok=True)
                log.warning(
                    "the chain module did not build: the journal chain runs in Lua",
                    error=(proc.stderr or proc.stdout).strip()[-300:],
                )
                return None
            os.replace(partial, target)
            return target
    except (OSError, subprocess.SubprocessError) as e:
        log.warning(
            "the chain module is not available: the journal chain runs in Lua", error=str(e)
        )
        return None
