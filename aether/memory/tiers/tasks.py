"""Tasks and the goals they roll up to: what the agent and its operator have to do.

Two hashes, journaled like all agent state (a rollback restores them):

- ``ns:tasks``: task id -> JSON :class:`Task` (title, notes, status open|done, priority 1
  highest to 5 lowest, optional due date and goal, created and done times);
- ``ns:goals``: goal id -> JSON :class:`Goal` (title, notes, status open|done, times).

Open tasks feed the heartbeat; :func:`suggestion_order` is the deterministic order
``aether task suggest`` uses when no model is configured.
"""

from __future__ import annotations

import time
from datetime import date
from typing import Generic, Literal, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from aether.codec import text
from aether.errors import InvalidOperationError, NotFoundError
from aether.ids import check_id, new_id, resolve_prefix
from aether.memory.storage.layer import MemoryLayer
from aether.store.state import Mutation

__all__ = [
    "DUE_SOON_DAYS",
    "MAX_NOTES",
    "MAX_TITLE",
    "STATUSES",
    "Goal",
    "Goals",
    "Suggestion",
    "Task",
    "TaskStatus",
    "Tasks",
    "parse_due",
    "suggestion_order",
]

MAX_TITLE = 500
MAX_NOTES = 4000
TaskStatus = Literal["open", "done"]
STATUSES: tuple[str, ...] = get_args(TaskStatus)


class Task(BaseModel):
    """One task, as stored (JSON) in the task hash."""

    id: str
    title: str
    status: TaskStatus = "open"
    priority: int = 3
    due: str | None = None
    goal: str | None = None
    notes: str = ""
    created_at: float
    done_at: float | None = None


class Goal(BaseModel):
    """A larger objective that tasks roll up to."""

    id: str
    title: str
    status: TaskStatus = "open"
    notes: str = ""
    created_at: float
    done_at: float | None = None


R = TypeVar("R", Task, Goal)


def check_title(title: str, what: str = "task") -> str:
    """The title stripped.

    Raises:
        InvalidOperationError: empty, or over :data:`MAX_TITLE` characters.
    """
    if not title.strip() or len(title) > MAX_TITLE:
        raise InvalidOperationError(f"a {what} title is 1-{MAX_TITLE} characters")
    return title.strip()


def check_notes(notes: str) -> str:
    """The notes stripped.

    Raises:
        InvalidOperationError: over :data:`MAX_NOTES` characters.
    """
    if len(notes) > MAX_NOTES:
        raise InvalidOperationError(f"notes are at most {MAX_NOTES} characters")
    return notes.strip()


def check_priority(priority: int) -> int:
    """The priority, 1 (highest) to 5 (lowest).

    Raises:
        InvalidOperationError: outside 1-5.
    """
    if not 1 <= priority <= 5:
        raise InvalidOperationError("priority is 1 (highest) to 5 (lowest)")
    return priority


def parse_due(due: str | None) -> str | None:
    """A due date as ``YYYY-MM-DD`` (``None`` or empty: no due date).

    Raises:
        InvalidOperationError: not a date.
    """
    if due is None or not due.strip():
        return None
    try:
        return date.fromisoformat(due.strip()).isoformat()
    except ValueError as e:
        raise InvalidOperationError(f"due {due[:40]!r}: use YYYY-MM-DD") from e


class _Records(Generic[R]):
    """Records of one pydantic model kept as JSON in one journaled hash."""

    what = "record"
    model: type[R]

    def __init__(self, memory: MemoryLayer, key: str) -> None:
        self.memory = memory
        self.key = key

    async def _raw(self) -> dict[str, str]:
        raw = await self.memory.client.hgetall(self.key)
        return {text(k): text(v) for k, v in raw.items()}

    async def _write(self, record: R, reason: str) -> None:
        m = Mutation().hset(self.key, {record.id: record.model_dump_json()})
        await self.memory.store.apply(m, reason)

    async def get(self, id_or_prefix: str) -> R:
        """One record by id or unique prefix.

        Raises:
            NotFoundError / AmbiguousIdError: no such record, or several match.
        """
        found = resolve_prefix(list(await self._raw()), id_or_prefix, self.what)
        return self.model.model_validate_json(text(await self.memory.client.hget(self.key, found)))

    async def _set_status(self, id_or_prefix: str, status: TaskStatus, now: float | None) -> R:
        """Mark a record done (at ``now``) or open again; journaled as ``<what>.done|reopen``.

        Raises:
            NotFoundError / AmbiguousIdError: no such record, or several match.
            InvalidOperationError: it already has that status.
        """
        record = await self.get(id_or_prefix)
        if record.status == status:
            raise InvalidOperationError(f"{self.what} {record.id} is already {status}")
        done_at = (now or time.time()) if status == "done" else None
        record = record.model_copy(update={"status": status, "done_at": done_at})
        await self._write(record, f"{self.what}.{'done' if status == 'done' else 'reopen'}")
        return record


class Goals(_Records[Goal]):
    """The goals of one namespace."""

    what = "goal"
    model = Goal

    def __init__(self, memory: MemoryLayer) -> None:
        super().__init__(memory, memory.keys.goals())

    async def all(self) -> list[Goal]:
        """Every goal: open ones first, oldest first."""
        goals = [Goal.model_validate_json(v) for v in (await self._raw()).values()]
        goals.sort(key=lambda g: (g.status != "open", g.created_at))
        return goals

    async def list(self, status: str | None = "open") -> list[Goal]:
        """Goals of one status (``None``: all)."""
        _check_status(status)
        return [g for g in await self.all() if status is None or g.status == status]

    async def add(self, title: str, notes: str = "", now: float | None = None) -> Goal:
        """Add an open goal.

        Raises:
            InvalidOperationError: empty or long title or notes.
        """
        goal = Goal(
            id=new_id(),
            title=check_title(title, "goal"),
            notes=check_notes(notes),
            created_at=now or time.time(),
        )
        await self._write(goal, "goal.add")
        return goal

    async def done(self, id_or_prefix: str, now: float | None = None) -> Goal:
        """Mark a goal done (its tasks stay as they are).

        Raises:
            NotFoundError / AmbiguousIdError: no such goal, or several match.
            InvalidOperationError: it is already done.
        """
        return await self._set_status(id_or_prefix, "done", now)


class Tasks(_Records[Task]):
    """The task list of one namespace."""

    what = "task"
    model = Task

    def __init__(self, memory: MemoryLayer) -> None:
        super().__init__(memory, memory.keys.tasks())
        self.goals = Goals(memory)

    async def all(self) -> list[Task]:
        """Every task: open ones by priority, due date and age, then done ones."""
        tasks: list[Task] = []
        for raw in (await self._raw()).values():
            try:
                tasks.append(Task.model_validate_json(raw))
            except ValidationError:
                continue  # a hand-edited value: skipped, never fatal to the list
        tasks.sort(key=lambda t: (t.status != "open", t.priority, t.due or "9999", t.created_at))
        return tasks

    async def list(self, status: str | None = "open", goal: str | None = None) -> list[Task]:
        """Tasks of one status (``None``: all), of one goal if given (id or prefix)."""
        _check_status(status)
        goal_id = (await self.goals.get(goal)).id if goal else None
        return [
            t
            for t in await self.all()
            if (status is None or t.status == status) and (goal_id is None or t.goal == goal_id)
        ]

    async def _goal_id(self, goal: str | None) -> str | None:
        if goal is None or not goal.strip():
            return None
        check_id(goal.strip(), "goal id")
        try:
            return (await self.goals.get(goal.strip())).id
        except NotFoundError:
            raise NotFoundError(f"no goal {goal.strip()!r} (aether goal list)") from None

    async def add(
        self,
        title: str,
        priority: int = 3,
        due: str | None = None,
        *,
        goal: str | None = None,
        notes: str = "",
        now: float | None = None,
    ) -> Task:
        """Add an open task, optionally towards a goal (its id or unique prefix).

        Raises:
            InvalidOperationError: empty or long title, priority outside 1-5, bad due date.
            NotFoundError: no such goal.
        """
        task = Task(
            id=new_id(),
            title=check_title(title),
            priority=check_priority(priority),
            due=parse_due(due),
            goal=await self._goal_id(goal),
            notes=check_notes(notes),
            created_at=now or time.time(),
        )
        await self._write(task, "task.add")
        return task

    async def edit(
        self,
        id_or_prefix: str,
        *,
        title: str | None = None,
        priority: int | None = None,
        due: str | None = None,
        goal: str | None = None,
        notes: str | None = None,
    ) -> Task:
        """Change a task's fields; an argument left ``None`` keeps its value.

        An empty ``due`` or ``goal`` clears it.

        Raises:
            NotFoundError / AmbiguousIdError: no such task or goal, or several match.
            InvalidOperationError: nothing to change, or a value out of range.
        """
        task = await self.get(id_or_prefix)
        changes: dict[str, object] = {}
        if title is not None:
            changes["title"] = check_title(title)
        if priority is not None:
            changes["priority"] = check_priority(priority)
        if due is not None:
            changes["due"] = parse_due(due)
        if goal is not None:
            changes["goal"] = await self._goal_id(goal)
        if notes is not None:
            changes["notes"] = check_notes(notes)
        if not changes:
            raise InvalidOperationError("nothing to change: give a title, priority, due or goal")
        task = task.model_copy(update=changes)
        await self._write(task, "task.edit")
        return task

    async def done(self, id_or_prefix: str, now: float | None = None) -> Task:
        """Mark a task done.

        Raises:
            NotFoundError / AmbiguousIdError: no such task, or several match.
            InvalidOperationError: it is already done.
        """
        return await self._set_status(id_or_prefix, "done", now)

    async def reopen(self, id_or_prefix: str) -> Task:
        """Open a done task again.

        Raises:
            NotFoundError / AmbiguousIdError: no such task, or several match.
            InvalidOperationError: it is open.
        """
        return await self._set_status(id_or_prefix, "open", None)


DUE_SOON_DAYS = 3


class Suggestion(BaseModel):
    """An open task's place in a suggested order, and why."""

    task: Task
    reasons: list[str]


def suggestion_order(
    tasks: list[Task], goals: list[Goal], mentioned: dict[str, float], today: date
) -> list[Suggestion]:
    """Open tasks in the deterministic order used when no model ranks them.

    Overdue first, then due within :data:`DUE_SOON_DAYS` days, then by priority, then
    those towards an open goal, then the most recently mentioned in memory (``mentioned``:
    task id -> epoch seconds of the newest memory about it), then the oldest.
    """
    open_goals = {g.id: g for g in goals if g.status == "open"}

    def days_left(task: Task) -> int | None:
        return (date.fromisoformat(task.due) - today).days if task.due else None

    def key(task: Task) -> tuple[int, int, int, int, float, float]:
        left = days_left(task)
        overdue = left is not None and left < 0
        soon = left is not None and 0 <= left <= DUE_SOON_DAYS
        return (
            0 if overdue else 1,
            0 if soon else 1,
            task.priority,
            0 if task.goal in open_goals else 1,
            -mentioned.get(task.id, 0.0),
            task.created_at,
        )

    def reasons(task: Task) -> list[str]:
        left = days_left(task)
        out: list[str] = []
        if left is not None and left < 0:
            out.append(f"overdue by {-left} day{'s' if left != -1 else ''}")
        elif left is not None and left <= DUE_SOON_DAYS:
            out.append("due today" if left == 0 else f"due in {left} day{'s' if left != 1 else ''}")
        out.append(f"priority {task.priority}")
        if task.goal in open_goals:
            out.append(f"towards goal {open_goals[task.goal].title!r}")
        if task.id in mentioned:
            out.append("mentioned in memory")
        return out

    ranked = sorted((t for t in tasks if t.status == "open"), key=key)
    return [Suggestion(task=t, reasons=reasons(t)) for t in ranked]


def _check_status(status: str | None) -> None:
    if status is not None and status not in STATUSES:
        raise InvalidOperationError(f"status is one of {', '.join(STATUSES)}")
