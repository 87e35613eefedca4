"""Tasks (seed 001's task plugin, seed 004's action items): what the agent has to do.

One hash, ``ns:tasks``: task id -> JSON (title, status open|done, priority 1 highest to
5 lowest, optional due date, created and done times). Journaled like all agent state;
open tasks feed the heartbeat.
"""

from __future__ import annotations

import json
import time
from datetime import date
from typing import Literal, get_args

from typing_extensions import TypedDict

from aether.codec import text
from aether.errors import InvalidOperationError
from aether.ids import new_id, resolve_prefix
from aether.memory.layer import MemoryLayer
from aether.store.state import Mutation

MAX_TITLE = 500
TaskStatus = Literal["open", "done"]
STATUSES: tuple[str, ...] = get_args(TaskStatus)


class Task(TypedDict):
    """One task, as stored (JSON) in the task hash."""

    id: str
    title: str
    status: str
    priority: int
    due: str | None
    created_at: float
    done_at: float | None


class Tasks:
    """The task list of one namespace."""

    def __init__(self, layer: MemoryLayer) -> None:
        self.layer = layer
        self.key = layer.keys.tasks()

    async def add(
        self, title: str, priority: int = 3, due: str | None = None, now: float | None = None
    ) -> Task:
        """Add an open task.

        Raises:
            InvalidOperationError: empty or long title, priority outside 1-5, bad due date.
        """
        if not title.strip() or len(title) > MAX_TITLE:
            raise InvalidOperationError(f"a task title is 1-{MAX_TITLE} characters")
        if not 1 <= priority <= 5:
            raise InvalidOperationError("priority is 1 (highest) to 5 (lowest)")
        if due is not None:
            try:
                due = date.fromisoformat(due).isoformat()
            except ValueError as e:
                raise InvalidOperationError(f"due {due!r}: use YYYY-MM-DD") from e
        task = Task(
            id=new_id(),
            title=title.strip(),
            status="open",
            priority=priority,
            due=due,
            created_at=now or time.time(),
            done_at=None,
        )
        await self._write(task, "task.add")
        return task

    async def _write(self, task: Task, reason: str) -> None:
        m = Mutation().hset(self.key, {task["id"]: json.dumps(task, ensure_ascii=False)})
        await self.layer.store.apply(m, reason)

    async def all(self) -> list[Task]:
        """Every task: open ones by priority, due date and age, then done ones."""
        raw = await self.layer.client.hgetall(self.key)
        tasks: list[Task] = [json.loads(text(v)) for v in raw.values()]
        tasks.sort(
            key=lambda t: (
                t["status"] != "open",
                t["priority"],
                t["due"] or "9999",
                t["created_at"],
            )
        )
        return tasks

    async def list(self, status: str | None = "open") -> list[Task]:
        """Tasks of one status (``None``: all)."""
        if status is not None and status not in STATUSES:
            raise InvalidOperationError(f"status is one of {', '.join(STATUSES)}")
        return [t for t in await self.all() if status is None or t["status"] == status]

    async def done(self, id_or_prefix: str, now: float | None = None) -> Task:
        """Mark a task done.

        Raises:
            NotFoundError / AmbiguousIdError: no such task, or several match.
            InvalidOperationError: it is already done.
        """
        tasks = {t["id"]: t for t in await self.all()}
        task = tasks[resolve_prefix(list(tasks), id_or_prefix, "task")]
        if task["status"] == "done":
            raise InvalidOperationError(f"task {task['id']} is already done")
        task = Task(**{**task, "status": "done", "done_at": now or time.time()})
        await self._write(task, "task.done")
        return task
