"""The archetype's tools, confined to the workspace: files, search and ``bash``.

Why: docs/design.md, "Tools". ``AETHER_WORKSPACE`` (default ``$AETHER_HOME/workspace``)
is the only directory they touch. Every path is relative to it and resolved before use:
an absolute path, a ``..`` component or a symlink that leads out is refused as the
tool's error, with nothing read or written. Reads, writes and output are capped.
``bash`` runs in the workspace, in its own process group, with an environment that holds
no secret of aether's (only ``PATH``, ``HOME`` = the workspace, ``LANG``, ``TERM``); at
its timeout the whole group is killed, children included, and a finished command's
stragglers are killed too. Every write a tool makes (``bash``'s as well, found by
comparing the workspace before and after) is returned as a change, which the ledger
records: the operator sees what changed on disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aether.config import ToolSettings
from aether.errors import InvalidOperationError

__all__ = ["WORKSPACE_TOOLS", "ToolOutput", "Workspace", "workspace_tools"]

WORKSPACE_TOOLS = ("read_file", "write_file", "edit_file", "glob", "grep", "bash")
MAX_LISTED = 500
MAX_SCANNED = 20_000
_SAFE_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


@dataclass
class ToolOutput:
    """A tool's text for the model, and the files it changed (for the ledger)."""

    text: str
    changes: list[dict[str, Any]] = field(default_factory=list)


class Workspace:
    """One directory the agent may work in.

    Args:
        root: the directory (created 0700 when missing).
        settings: the caps.
    """

    def __init__(self, root: Path, settings: ToolSettings) -> None:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.root = root.resolve()
        self.settings = settings

    def resolve(self, path: str) -> Path:
        """``path`` inside the workspace, symlinks followed.

        Raises:
            InvalidOperationError: an empty or absolute path, a ``..`` component, or one
                that leads out of the workspace.
        """
        if not path.strip() or "\x00" in path:
            raise InvalidOperationError("a path relative to the workspace is needed")
        raw = Path(path)
        if raw.is_absolute() or path.startswith("~"):
            raise InvalidOperationError(f"{path[:200]!r}: absolute paths are outside the workspace")
        if ".." in raw.parts:
            raise InvalidOperationError(f"{path[:200]!r}: '..' leads out of the workspace")
        resolved = (self.root / raw).resolve()
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise InvalidOperationError(f"{path[:200]!r}: a symlink leads out of the workspace")
        return resolved

    def shown(self, path: Path) -> str:
        """``path`` as the model names it: relative to the workspace."""
        return str(path.relative_to(self.root)) if path != self.root else "."

    def cap(self, output: str) -> str:
        """``output`` cut to the output cap, saying so."""
        limit = self.settings.output_chars
        if len(output) <= limit:
            return output
        return output[:limit] + f"\n[cut: {len(output) - limit} more characters]"

    async def read_file(self, path: str, start_line: int = 1, max_lines: int = 2000) -> str:
        """A text file's lines (numbered), from ``start_line``."""
        target = self.resolve(path)
        if not target.is_file():
            raise InvalidOperationError(f"{path!r}: no such file in the workspace")
        data = await asyncio.to_thread(_read_head, target, self.settings.read_bytes)
        if b"\x00" in data[:8192]:
            raise InvalidOperationError(f"{path!r} is binary")
        lines = data.decode(errors="replace").splitlines()
        start = max(1, start_line)
        chosen = lines[start - 1 : start - 1 + max(1, max_lines)]
        body = "\n".join(f"{n:>6}  {line}" for n, line in enumerate(chosen, start))
        size = target.stat().st_size
        if size > len(data):
            body += f"\n[file is {size} bytes; the first {len(data)} were read]"
        return self.cap(body or "[empty file]")

    async def write_file(self, path: str, content: str) -> ToolOutput:
        """Write ``content`` to a file (created, with its folders, or replaced)."""
        target = self.resolve(path)
        data = content.encode()
        if len(data) > self.settings.write_bytes:
            raise InvalidOperationError(
                f"{len(data)} bytes: over the write cap of {self.settings.write_bytes}"
            )
        if target.is_dir():
            raise InvalidOperationError(f"{path!r} is a directory")
        before = _digest(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        self.resolve(path)  # a folder just made cannot be a symlink out, but check again
        await asyncio.to_thread(target.write_bytes, data)
        change = _change(self.shown(target), before, data)
        return ToolOutput(f"wrote {len(data)} bytes to {self.shown(target)}", [change])

    async def edit_file(
        self, path: str, old: str, new: str, replace_all: bool = False
    ) -> ToolOutput:
        """Replace ``old`` with ``new`` in a file.

        ``old`` must be found exactly once, unless ``replace_all``.
        """
        target = self.resolve(path)
        if not target.is_file():
            raise InvalidOperationError(f"{path!r}: no such file in the workspace")
        if not old:
            raise InvalidOperationError("'old' must not be empty")
        if target.stat().st_size > self.settings.write_bytes:
            raise InvalidOperationError(f"{path!r} is over the write cap")
        current = (await asyncio.to_thread(target.read_bytes)).decode(errors="strict")
        found = current.count(old)
        if found == 0:
            raise InvalidOperationError(f"'old' was not found in {path!r}")
        if found > 1 and not replace_all:
            raise InvalidOperationError(
                f"'old' is found {found} times in {path!r}: give more context or replace_all"
            )
        updated = current.replace(old, new).encode()
        if len(updated) > self.settings.write_bytes:
            raise InvalidOperationError("the edited file would be over the write cap")
        before = _digest(target)
        await asyncio.to_thread(target.write_bytes, updated)
        change = _change(self.shown(target), before, updated)
        return ToolOutput(f"replaced {found} occurrence(s) in {self.shown(target)}", [change])

    async def glob(self, pattern: str) -> str:
        """Files matching a glob (``src/**/*.py``), relative to the workspace."""
        if not pattern.strip() or Path(pattern).is_absolute() or ".." in Path(pattern).parts:
            raise InvalidOperationError("a glob relative to the workspace, without '..'")

        def walk() -> list[str]:
            found: list[str] = []
            for p in self.root.glob(pattern):
                resolved = p.resolve()
                if resolved.is_relative_to(self.root) and p.is_file():
                    found.append(self.shown(p.absolute()))
                    if len(found) >= MAX_LISTED:
                        break
            return sorted(found)

        try:
            found = await asyncio.to_thread(walk)
        except ValueError as e:
            raise InvalidOperationError(f"glob {pattern!r}: {e}") from None
        more = "\n[more files match; narrow the glob]" if len(found) >= MAX_LISTED else ""
        return self.cap("\n".join(found) + more) if found else "no files match"

    async def grep(self, pattern: str, path: str = ".", glob: str = "**/*") -> str:
        """Lines matching a regular expression, as ``file:line: text``."""
        try:
            regex = re.compile(pattern)
        except re.error as e:
            raise InvalidOperationError(f"bad regular expression: {e}") from None
        base = self.resolve(path)
        if Path(glob).is_absolute() or ".." in Path(glob).parts:
            raise InvalidOperationError("a glob relative to the workspace, without '..'")
        limit, per_file = self.settings.output_chars, self.settings.read_bytes

        def search() -> list[str]:
            files = [base] if base.is_file() else sorted(base.glob(glob))
            hits: list[str] = []
            size = 0
            for f in files[:MAX_SCANNED]:
                if not f.is_file() or not f.resolve().is_relative_to(self.root):
                    continue
                data = _read_head(f, per_file)
                if b"\x00" in data[:8192]:
                    continue
                for n, line in enumerate(data.decode(errors="replace").splitlines(), 1):
                    if regex.search(line):
                        hit = f"{self.shown(f.resolve())}:{n}: {line[:300]}"
                        hits.append(hit)
                        size += len(hit) + 1
                        if size > limit:
                            return hits
            return hits

        hits = await asyncio.to_thread(search)
        return self.cap("\n".join(hits)) if hits else "no matches"

    async def bash(self, command: str, timeout_s: float | None = None) -> ToolOutput:
        """Run a shell command in the workspace (see the module docs)."""
        if not command.strip():
            raise InvalidOperationError("the command is empty")
        limit = min(timeout_s or self.settings.bash_timeout_s, self.settings.bash_timeout_s)
        before = await asyncio.to_thread(_scan, self.root)
        process = await asyncio.create_subprocess_exec(
            "/bin/bash",
            "-c",
            command,
            cwd=self.root,
            env=self.environment(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        assert process.stdout is not None
        reader = asyncio.create_task(_read_capped(process.stdout, self.settings.output_chars * 4))
        timed_out = False
        try:
            await asyncio.wait_for(process.wait(), timeout=limit)
        except TimeoutError:
            timed_out = True
        finally:
            _kill_group(process.pid)  # at the timeout, or stragglers a finished command left
            with contextlib.suppress(ProcessLookupError):
                await process.wait()
        try:
            output = await asyncio.wait_for(reader, timeout=2.0)
        except TimeoutError:
            reader.cancel()
            output = b""
        after = await asyncio.to_thread(_scan, self.root)
        changes = _compare(before, after)
        head = (
            f"killed after {limit:g} s (timeout)"
            if timed_out
            else f"exit code {process.returncode}"
        )
        text = self.cap(f"{head}\n{output.decode(errors='replace')}".rstrip())
        if timed_out:
            raise InvalidOperationError(text)
        return ToolOutput(text, changes)

    def environment(self) -> dict[str, str]:
        """``bash``'s environment: no secrets, ``HOME`` in the workspace."""
        env = {name: os.environ[name] for name in _SAFE_ENV if name in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.update(HOME=str(self.root), TERM="dumb", PWD=str(self.root))
        return env


ToolHandler = Callable[[dict[str, object]], Awaitable["str | ToolOutput"]]


def workspace_tools(
    workspace: Workspace, names: tuple[str, ...]
) -> list[tuple[str, str, dict[str, Any], ToolHandler]]:
    """(name, description, parameters, handler) of the named workspace tools."""
    ws = workspace

    def string(description: str) -> dict[str, Any]:
        return {"type": "string", "description": description}

    def integer(description: str) -> dict[str, Any]:
        return {"type": "integer", "description": description}

    def schema(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "properties": properties, "required": required}

    path = string("A path relative to the workspace.")
    table: dict[str, tuple[str, dict[str, Any], ToolHandler]] = {
        "read_file": (
            "Read a text file of the workspace, with line numbers.",
            schema(
                ["path"],
                path=path,
                start_line=integer("First line (1-based)."),
                max_lines=integer("How many lines."),
            ),
            lambda a: ws.read_file(
                str(a["path"]), int(str(a.get("start_line", 1))), int(str(a.get("max_lines", 2000)))
            ),
        ),
        "write_file": (
            "Create or replace a file of the workspace with the given content.",
            schema(["path", "content"], path=path, content=string("The whole new content.")),
            lambda a: ws.write_file(str(a["path"]), str(a["content"])),
        ),
        "edit_file": (
            "Replace text in a file of the workspace: 'old' must be found exactly once "
            "unless replace_all.",
            schema(
                ["path", "old", "new"],
                path=path,
                old=string("The exact text to replace."),
                new=string("Its replacement."),
                replace_all={"type": "boolean", "description": "Replace every occurrence."},
            ),
            lambda a: ws.edit_file(
                str(a["path"]), str(a["old"]), str(a["new"]), bool(a.get("replace_all", False))
            ),
        ),
        "glob": (
            "List the workspace's files matching a glob such as src/**/*.py.",
            schema(["pattern"], pattern=string("A glob relative to the workspace.")),
            lambda a: ws.glob(str(a["pattern"])),
        ),
        "grep": (
            "Search the workspace's files for a regular expression; lines as file:line: text.",
            schema(
                ["pattern"],
                pattern=string("A Python regular expression."),
                path=string("A file or folder to search (default: the whole workspace)."),
                glob=string("Which files under it (default **/*)."),
            ),
            lambda a: ws.grep(
                str(a["pattern"]), str(a.get("path", ".")), str(a.get("glob", "**/*"))
            ),
        ),
        "bash": (
            "Run a bash command in the workspace (no network secrets, a timeout); returns "
            "the exit code and output.",
            schema(
                ["command"],
                command=string("The command line."),
                timeout_s={"type": "number", "description": "Seconds before it is killed."},
            ),
            lambda a: ws.bash(
                str(a["command"]),
                float(str(a["timeout_s"])) if a.get("timeout_s") is not None else None,
            ),
        ),
    }
    return [(name, *table[name]) for name in names if name in table]


def _read_head(path: Path, limit: int) -> bytes:
    with path.open("rb") as f:
        return f.read(limit)


def _digest(path: Path) -> str | None:
    if not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _change(shown: str, before: str | None, data: bytes) -> dict[str, Any]:
    return {
        "path": shown,
        "action": "created" if before is None else "modified",
        "bytes": len(data),
        "sha256_before": before,
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def _scan(root: Path) -> dict[str, tuple[int, int]]:
    """Path -> (size, mtime_ns) of the workspace's files (bounded)."""
    found: dict[str, tuple[int, int]] = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            full = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                st = os.lstat(full)
                found[os.path.relpath(full, root)] = (st.st_size, st.st_mtime_ns)
            if len(found) >= MAX_SCANNED:
                return found
    return found


def _compare(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = []
    for path in sorted(set(before) | set(after)):
        if path not in before:
            changes.append({"path": path, "action": "created", "bytes": after[path][0]})
        elif path not in after:
            changes.append({"path": path, "action": "deleted"})
        elif before[path] != after[path]:
            changes.append({"path": path, "action": "modified", "bytes": after[path][0]})
    return changes[:MAX_LISTED]


async def _read_capped(stream: asyncio.StreamReader, limit: int) -> bytes:
    """Read to EOF, keeping the first ``limit`` bytes (the rest drained, so no pipe fills)."""
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < limit:
            kept += chunk[: limit - len(kept)]
    return bytes(kept)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
