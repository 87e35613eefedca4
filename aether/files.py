"""Files aether writes or reads on a user's behalf: owner-only modes and contained paths.

Everything aether writes (its home, the embedded Redis data directory with the AOF and
RDB files, logs, exports, sockets, the password file) holds agent memory or a secret, so
it is created owner-only (directories 0700, files 0600) whatever the caller's umask.
Every path aether reads on a user's behalf from a tree (a repository, an identity
directory) must be a regular file whose real path stays inside that tree's root, so a
symlink cannot pull an outside file into memory and from there into a model's context.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import structlog

from aether.errors import InvalidOperationError

PRIVATE_UMASK = 0o077
# the folders aether owns inside its home; the home may be shared with other files
HOME_FOLDERS = ("redis", "logs", "run")
DIR_MODE = 0o700
FILE_MODE = 0o600

log = structlog.get_logger(__name__)

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "PRIVATE_UMASK",
    "Containment",
    "atomic_private_writer",
    "contain",
    "log_tightened",
    "owned_entries",
    "private_dir",
    "tighten_home",
    "wider_than_owner",
]


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) owner-only; tighten it if it exists.

    Only the directories this call creates and ``path`` itself are set to 0700: an
    existing parent (the user's home, ``/tmp``) is left as it is.
    """
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=DIR_MODE)
        os.chmod(folder, DIR_MODE)
    if stat.S_IMODE(path.stat().st_mode) != DIR_MODE:
        os.chmod(path, DIR_MODE)
    return path


def wider_than_owner(mode: int) -> bool:
    """Whether a file mode grants anything to group or others."""
    return bool(stat.S_IMODE(mode) & 0o077)


def owned_entries(root: Path) -> Iterator[tuple[Path, int]]:
    """``root`` and every folder and regular file below it, with its mode (links skipped).

    Sockets keep the mode their server gives them (inside a 0700 folder); an entry that
    vanishes meanwhile (a rotated log, a rewritten AOF) is passed over.
    """
    if not root.is_dir() or root.is_symlink():
        return
    candidates = [root]
    for folder, dirs, files in os.walk(root):
        candidates += [Path(folder) / name for name in [*dirs, *files]]
    for path in candidates:
        try:
            mode = path.lstat().st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
            yield path, mode


def _tighten(root: Path) -> list[str]:
    """Make every folder 0700 and every file 0600 under ``root`` (links untouched)."""
    fixed: list[str] = []
    for path, mode in owned_entries(root):
        if wider_than_owner(mode):
            want = DIR_MODE if stat.S_ISDIR(mode) else FILE_MODE
            with contextlib.suppress(OSError):
                os.chmod(path, stat.S_IMODE(mode) & want)
                fixed.append(str(path.relative_to(root)) or ".")
    return fixed


def tighten_home(home: Path) -> list[str]:
    """Make ``home`` itself 0700 and everything in aether's own folders of it owner-only.

    Other files a user keeps in the home are left alone. Returns what was tightened
    (the caller logs it: this runs before logging is configured, too).
    """
    fixed: list[str] = []
    with contextlib.suppress(OSError):
        mode = home.lstat().st_mode
        if stat.S_ISDIR(mode) and wider_than_owner(mode):
            os.chmod(home, DIR_MODE)
            fixed.append(".")
    for name in HOME_FOLDERS:
        fixed += [f"{name}/{p}" if p != "." else name for p in _tighten(home / name)]
    return fixed


def log_tightened(home: Path, fixed: list[str]) -> None:
    """The notice that an existing home was wider than owner-only and has been fixed."""
    if fixed:
        log.warning(
            "tightened permissions: aether's files are owner-only now",
            home=str(home),
            count=len(fixed),
            examples=fixed[:5],
        )


@contextlib.contextmanager
def atomic_private_writer(path: Path) -> Iterator[IO[str]]:
    """Write ``path`` through an owner-only temporary file renamed into place at the end.

    A failure (full disk, an exception in the block) removes the temporary file and
    leaves ``path`` as it was: a failed export leaves nothing behind.

    Raises:
        InvalidOperationError: ``path`` is a directory or another non-regular file, its
            folder does not exist, or writing fails; nothing is left behind.
    """
    target = Path(path)
    if target.exists() and not target.is_file():
        raise InvalidOperationError(f"{target} is not a regular file; choose a file path")
    folder = target.parent
    if not folder.is_dir():
        raise InvalidOperationError(f"cannot write {target}: folder {folder} does not exist")
    try:
        fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise InvalidOperationError(f"cannot write {target}: {e.strerror}") from e
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, target)
    except OSError as e:
        temp.unlink(missing_ok=True)
        raise InvalidOperationError(f"cannot write {target}: {e.strerror or e}") from e
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Containment:
    """The verdict on one path under a root: ``path`` to read, or why it is skipped."""

    path: Path | None
    reason: str | None

    @property
    def ok(self) -> bool:
        """Whether the path may be read."""
        return self.path is not None


def contain(root: Path, candidate: Path) -> Containment:
    """Judge ``candidate`` (absolute or relative to ``root``) against ``root``.

    It may be read when its real path (every symlink resolved) lies inside the real
    ``root`` and is a regular file. Reasons otherwise: ``outside_root``,
    ``not_regular`` (a FIFO, socket, device or directory), ``missing`` (also a dangling
    link or a symlink loop).
    """
    real_root = root.resolve()
    path = candidate if candidate.is_absolute() else root / candidate
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):  # missing, a dangling link or a symlink loop
        return Containment(None, "missing")
    if real != real_root and real_root not in real.parents:
        return Containment(None, "outside_root")
    try:
        mode = real.stat().st_mode
    except OSError:
        return Containment(None, "missing")
    if not stat.S_ISREG(mode):
        return Containment(None, "not_regular")
    return Containment(real, None)
