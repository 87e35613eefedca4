"""Repository intelligence: a map of a repository's files and their imports.

Why: docs/design.md, "Repository intelligence".

``index(root)`` lists the repository's files (``git ls-files`` when it is a git
checkout, else a walk that skips VCS, virtual-env and build folders), keeps those in a
supported language, and stores one document per file (``ns:repo:<rid>:file:<pid>``:
language, content hash, size, imports, symbols) plus the path list. A re-index reads
every file but parses and writes only those whose content hash changed, and removes
the vanished ones. Imports are resolved to files when queried, against the current file
list, so a re-index never has to revisit unchanged importers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
import subprocess
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Required

from typing_extensions import TypedDict

from aether.codec import byte_map, text, texts
from aether.errors import InvalidOperationError, NotFoundError
from aether.files import contain
from aether.memory.code.extract import extract
from aether.memory.code.model import language_of
from aether.memory.code.modules import module_of, resolve_import
from aether.memory.storage.layer import MemoryLayer
from aether.store.state import Mutation

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "dist",
        "build",
        "target",
        ".tox",
        ".next",
        "vendor",
    }
)
MAX_FILE_BYTES = 1024 * 1024
WRITE_BATCH = 200
FILE_FIELDS = ("path", "language", "hash", "imports", "module", "is_test", "symbols")


class FileDoc(TypedDict, total=False):
    """One indexed source file (the graph reads the :data:`FILE_FIELDS` of it)."""

    path: Required[str]
    language: Required[str]
    hash: str
    size: int
    imports: list[str]
    symbols: list[str]
    is_test: bool
    module: str
    error: str


class DependencyRow(TypedDict, total=False):
    """A file reached from another through imports, ``depth`` steps away."""

    path: Required[str]
    depth: Required[int]
    test: bool


class RelatedRow(TypedDict):
    """A file related to another, with how strongly."""

    path: str
    score: float


def repo_id(root: Path) -> str:
    """A readable, stable id for the repository at ``root``."""
    resolved = root.resolve()
    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in resolved.name)[:40] or "repo"
    return f"{slug}-{hashlib.sha1(str(resolved).encode()).hexdigest()[:8]}"


def path_id(path: str) -> str:
    """The key part of one file's document."""
    return hashlib.sha1(path.encode()).hexdigest()[:16]


@dataclass
class Listing:
    """The files to index (path -> real path), and those skipped with why."""

    real: dict[str, Path]
    skipped: list[tuple[str, str]]

    @property
    def paths(self) -> list[str]:
        """The paths to index, sorted."""
        return sorted(self.real)


def list_files(root: Path) -> Listing:
    """The repository's files in supported languages, as POSIX paths relative to ``root``.

    Only regular files whose real path stays inside ``root`` are listed: a symlink out of
    the repository (a file or a directory) and a FIFO, socket or device are skipped and
    reported, so indexing an untrusted checkout never reads a file outside it.
    """
    candidates: list[str] = []
    skipped: list[tuple[str, str]] = []
    if (root / ".git").exists():
        try:
            out = subprocess.run(
                [
                    "git",
                    "-C",
                    str(root),
                    "ls-files",
                    "-z",
                    "--cached",
                    "--others",
                    "--exclude-standard",
                ],
                capture_output=True,
                check=True,
                timeout=60,
            )
            candidates = [p for p in out.stdout.decode(errors="replace").split("\0") if p]
        except (OSError, subprocess.SubprocessError):
            candidates = []
    if not candidates:
        for folder, dirs, files in os.walk(root):
            rel = Path(folder).relative_to(root)
            for name in [d for d in dirs if (Path(folder) / d).is_symlink()]:
                verdict = contain(root, rel / name)
                reason = "outside_root" if verdict.reason == "outside_root" else "symlinked_dir"
                skipped.append(((rel / name).as_posix(), reason))
            dirs[:] = sorted(
                d
                for d in dirs
                if d not in SKIP_DIRS
                and not d.startswith(".")
                and not (Path(folder) / d).is_symlink()
            )
            candidates += [(rel / f).as_posix() for f in sorted(files)]
    real: dict[str, Path] = {}
    for path in sorted(candidates):
        if not language_of(path) and not (root / path).is_symlink():
            continue
        verdict = contain(root, Path(path))
        if verdict.path is not None:
            if language_of(path):
                real[path] = verdict.path
        elif verdict.reason != "missing":  # git lists files deleted since the last commit
            skipped.append((path, verdict.reason or "unreadable"))
    return Listing(real, sorted(skipped))


@dataclass
class IndexReport:
    """What an index run did."""

    repo: str
    root: str
    files: int
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    languages: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)
    skipped_paths: list[str] = field(default_factory=list)

    def skip(self, path: str, reason: str) -> None:
        """Count one path left out, and why."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        self.skipped_paths.append(path)


@dataclass
class RepoGraph:
    """The import graph of one repository, resolved to its files."""

    files: dict[str, FileDoc]
    imports: dict[str, set[str]]
    importers: dict[str, set[str]]


class Repositories:
    """Indexed repositories of one namespace."""

    def __init__(self, memory: MemoryLayer) -> None:
        self.memory = memory
        self.keys = memory.keys
        self.client = memory.client

    async def index(self, root: Path, progress: Callable[[int], None] | None = None) -> IndexReport:
        """Index (or re-index) the repository at ``root``.

        Raises:
            InvalidOperationError: ``root`` is not a directory.
        """
        if not root.is_dir():
            raise InvalidOperationError(f"{root} is not a directory")
        start = time.perf_counter()
        rid = repo_id(root)
        listing = await asyncio.to_thread(list_files, root)
        paths = listing.paths
        report = IndexReport(rid, str(root.resolve()), len(paths))
        for path, reason in listing.skipped:
            report.skip(path, reason)
        known = set(texts(await self.client.zrange(self.keys.repo_files(rid), 0, -1)))
        stored_hash: dict[str, str] = {}
        known_list = sorted(known)
        for begin in range(0, len(known_list), 500):
            batch = known_list[begin : begin + 500]
            docs = await self.memory.get_docs(
                [self.keys.repo_file(rid, path_id(p)) for p in batch], ("hash",)
            )
            stored_hash.update({p: d["hash"] for p, d in zip(batch, docs, strict=True) if d})
        pending: list[FileDoc] = []
        for path in listing.paths:
            data = await asyncio.to_thread(_read, listing.real[path])
            if data is None:  # replaced by a link or a FIFO since it was listed
                report.skip(path, "not_regular")
                paths.remove(path)
                report.files -= 1
                continue
            digest = hashlib.sha1(data).hexdigest()
            language = language_of(path) or "other"
            report.languages[language] = report.languages.get(language, 0) + 1
            if stored_hash.get(path) == digest:
                report.unchanged += 1
            else:
                pending.append(_file_doc(path, data, digest))
                report.changed.append(path)
            if progress is not None:
                progress(1)
            if len(pending) >= WRITE_BATCH:
                await self._write(rid, pending)
                pending = []
        if pending:
            await self._write(rid, pending)
        report.removed = sorted(known - set(paths))
        for begin in range(0, len(report.removed), WRITE_BATCH):
            m = Mutation()
            for path in report.removed[begin : begin + WRITE_BATCH]:
                m.delete(self.keys.repo_file(rid, path_id(path)))
                m.zrem(self.keys.repo_files(rid), path)
            await self.memory.store.apply(m, "repo.index.remove")
        report.seconds = round(time.perf_counter() - start, 3)
        if report.changed or report.removed or not known:
            meta: dict[str, str | float] = {
                "id": rid,
                "root": report.root,
                "files": report.files,
                "indexed_at": time.time(),
                "languages": json.dumps(report.languages),
            }
            m = Mutation().hset(self.keys.repo(rid), meta)
            m.zadd(self.keys.repos(), {rid: time.time()})
            await self.memory.store.apply(m, "repo.index")
        return report

    async def _write(self, rid: str, docs: list[FileDoc]) -> None:
        m = Mutation()
        now = time.time()
        for doc in docs:
            m.json_set(self.keys.repo_file(rid, path_id(doc["path"])), doc)
        m.zadd(self.keys.repo_files(rid), {doc["path"]: now for doc in docs})
        await self.memory.store.apply(m, "repo.index.files")

    async def repos(self) -> list[dict[str, str]]:
        """Indexed repositories, most recently indexed first."""
        ids = texts(await self.client.zrevrange(self.keys.repos(), 0, -1))
        out = []
        for rid in ids:
            meta = {
                text(k): text(v)
                for k, v in byte_map(await self.client.hgetall(self.keys.repo(rid))).items()
            }
            if meta:
                out.append(meta)
        return out

    async def locate(self, file: Path) -> tuple[str, str]:
        """(repository id, path in it) of a file in an indexed repository.

        Raises:
            NotFoundError: no indexed repository holds the file.
        """
        target = file.resolve()
        for meta in await self.repos():
            root = Path(meta["root"])
            if target.is_relative_to(root):
                return meta["id"], target.relative_to(root).as_posix()
        raise NotFoundError(f"{file} is in no indexed repository: run 'aether repo index PATH'")

    async def graph(self, rid: str) -> RepoGraph:
        """The repository's files and their resolved imports."""
        paths = texts(await self.client.zrange(self.keys.repo_files(rid), 0, -1))
        files: dict[str, FileDoc] = {}
        for begin in range(0, len(paths), 500):
            batch = paths[begin : begin + 500]
            docs = await self.memory.get_json(
                [self.keys.repo_file(rid, path_id(p)) for p in batch], FILE_FIELDS
            )
            files.update({p: d for p, d in zip(batch, docs, strict=True) if d})
        by_module: dict[str, list[str]] = {}
        for path, doc in files.items():
            if doc.get("module"):
                by_module.setdefault(doc["module"], []).append(path)
        imports: dict[str, set[str]] = {p: set() for p in files}
        importers: dict[str, set[str]] = {p: set() for p in files}
        for path, doc in files.items():
            for spec in doc.get("imports", []):
                for target in _resolve(path, spec, doc["language"], files, by_module):
                    if target != path:
                        imports[path].add(target)
                        importers[target].add(path)
        return RepoGraph(files, imports, importers)

    async def _graph_for(self, file: Path) -> tuple[RepoGraph, str]:
        rid, path = await self.locate(file)
        graph = await self.graph(rid)
        if path not in graph.files:
            raise NotFoundError(f"{path} is not an indexed source file of {rid}")
        return graph, path

    async def deps(self, file: Path) -> list[DependencyRow]:
        """What the file depends on, directly and transitively (with the depth)."""
        graph, path = await self._graph_for(file)
        return _walk(path, graph.imports)

    async def affected(self, file: Path) -> list[DependencyRow]:
        """What a change to the file can affect: its importers, transitively."""
        graph, path = await self._graph_for(file)
        found = _walk(path, graph.importers)
        for row in found:
            row["test"] = bool(graph.files[row["path"]].get("is_test"))
        return found

    async def related(self, file: Path, limit: int = 10) -> list[RelatedRow]:
        """Files most related to ``file``: imports either way, shared imports, same folder."""
        graph, path = await self._graph_for(file)
        scores: dict[str, float] = {}
        for other in graph.imports[path] | graph.importers[path]:
            scores[other] = scores.get(other, 0.0) + 3.0
        mine = graph.imports[path]
        for other in graph.files:
            if other == path:
                continue
            shared = len(mine & graph.imports[other])
            if shared:
                scores[other] = scores.get(other, 0.0) + shared
            if PurePosixPath(other).parent == PurePosixPath(path).parent:
                scores[other] = scores.get(other, 0.0) + 0.5
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return [RelatedRow(path=p, score=round(s, 2)) for p, s in ranked]


def _read(real: Path) -> bytes | None:
    """The first bytes of a file's resolved path, or ``None`` unless it is still regular.

    ``O_NOFOLLOW`` refuses a link put in its place since it was resolved (and listed as
    inside the root); ``O_NONBLOCK`` keeps a FIFO put there from blocking the read.
    """
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        return f.read(MAX_FILE_BYTES + 1)


def _file_doc(path: str, data: bytes, digest: str) -> FileDoc:
    language = language_of(path) or "other"
    doc = FileDoc(
        path=path,
        language=language,
        hash=digest,
        size=len(data),
        imports=[],
        symbols=[],
        is_test=False,
        module=module_of(path, language) or "",
        error="",
    )
    if len(data) > MAX_FILE_BYTES:
        doc["error"] = "too large to parse"
        return doc
    facts = extract(path, data.decode("utf-8", errors="replace"))
    if facts is not None:
        doc["imports"] = facts.imports
        doc["is_test"] = facts.is_test
        doc["error"] = facts.error or ""
        doc["symbols"] = [
            f"{s.kind}:{s.parent + '.' if s.parent else ''}{s.name}" for s in facts.symbols
        ]
    return doc


def _resolve(
    path: str,
    spec: str,
    language: str,
    files: dict[str, FileDoc],
    by_module: dict[str, list[str]],
) -> list[str]:
    """The repository files an import means (none for external packages)."""
    module = resolve_import(path, spec, language)
    if module in by_module:
        return by_module[module]
    if language == "python":
        # "import a.b.c" may name a function or class of module a.b: walk up
        parts = module.split(".")
        while len(parts) > 1:
            parts = parts[:-1]
            if ".".join(parts) in by_module:
                return by_module[".".join(parts)]
        return []
    if language == "go":
        # an import path ends with the package's folder (after the module path of go.mod)
        wanted = "/" + spec.strip("/")
        dirs = {str(PurePosixPath(p).parent) for p in files if files[p]["language"] == "go"}
        matching = [d for d in dirs if d != "." and wanted.endswith("/" + d)]
        if not matching:
            return []
        best = max(matching, key=len)
        return sorted(
            p
            for p in files
            if str(PurePosixPath(p).parent) == best and files[p]["language"] == "go"
        )
    if language == "rust":
        parts = [x for x in spec.replace("crate::", "").replace("self::", "").split("::") if x]
        for n in range(len(parts), 0, -1):
            stem = "/".join(parts[:n])
            for candidate in (
                f"src/{stem}.rs",
                f"src/{stem}/mod.rs",
                f"{stem}.rs",
                str(PurePosixPath(path).parent / f"{stem}.rs"),
            ):
                if candidate in files:
                    return [candidate]
    return []


def _walk(start: str, edges: dict[str, set[str]]) -> list[DependencyRow]:
    seen = {start: 0}
    queue = deque([start])
    while queue:
        current = queue.popleft()
        for nxt in sorted(edges.get(current, ())):
            if nxt not in seen:
                seen[nxt] = seen[current] + 1
                queue.append(nxt)
    return [
        DependencyRow(path=p, depth=d)
        for p, d in sorted(seen.items(), key=lambda kv: (kv[1], kv[0]))
        if p != start
    ]
