"""Each tool run the agent makes, recorded as an event of its archetype's domain.

Why: docs/design.md, "Entity graph and events". A coding agent's file reads, writes and edits
become ``file_*`` events (their files, symbols and imports enter the graph), its shell
commands ``shell_exec``, its searches ``search``; a general agent's runs are
``tool_call`` events. A failed run is an ``error`` event either way. The context's
"recent events" section and the graph are built from them.
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from aether.errors import InvalidOperationError
from aether.memory.knowledge.archetypes.base import Archetype
from aether.memory.knowledge.events import Events
from aether.memory.storage.layer import MemoryLayer
from aether.runtime.tools.box import ToolRun

__all__ = ["event_of", "record_tool_events"]

log = structlog.get_logger(__name__)

CODING_EVENTS = {
    "read_file": "file_read",
    "write_file": "file_write",
    "edit_file": "file_edit",
    "bash": "shell_exec",
    "grep": "search",
    "glob": "search",
}
"""A workspace tool -> the coding archetype's event for it."""
SHOWN_CHARS = 4000
"""The longest text an event keeps of a run's arguments or output."""


def event_of(run: ToolRun, event_types: tuple[str, ...]) -> tuple[str, dict[str, object]] | None:
    """The event type and payload of ``run`` in a domain of ``event_types`` (None: none fits)."""
    arguments: Mapping[str, object] = run.arguments
    payload: dict[str, object] = {"tool": run.name}
    for name in ("path", "command", "query", "pattern"):
        value = arguments.get(name)
        if isinstance(value, str):
            payload["query" if name == "pattern" else name] = value[:SHOWN_CHARS]
    if not run.success:
        payload["message"] = run.output[:SHOWN_CHARS]
        return ("error", payload) if "error" in event_types else None
    kind = CODING_EVENTS.get(run.name, "tool_call")
    if kind not in event_types:
        return None
    text = run.output if kind == "file_read" else arguments.get("content")
    if isinstance(text, str) and kind.startswith("file_"):
        payload["text"] = text[:SHOWN_CHARS]
    return kind, payload


async def record_tool_events(
    memory: MemoryLayer, archetype: Archetype, session: str, runs: list[ToolRun], now: float
) -> None:
    """Record one event per run that has one in the archetype's domain."""
    events = Events(memory, archetype)
    for run in runs:
        found = event_of(run, tuple(archetype.event_types))
        if found is None:
            continue
        kind, payload = found
        try:
            await events.record(
                kind,
                payload=payload,
                summary=f"{run.name} {'ok' if run.success else 'failed'}",
                outcome="success" if run.success else "failure",
                session=session,
                duration_ms=max(0.0, run.duration_ms),
                timestamp=now,
            )
        except InvalidOperationError as e:  # an oversized payload: the run is still recorded
            log.warning("tool run not recorded as an event", tool=run.name, error=str(e))
