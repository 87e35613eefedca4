"""Task and goal operations: add, list, edit, done, reopen, and suggest what to do next."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Literal

import structlog
from pydantic import BaseModel, Field, field_validator

from aether.errors import InvalidOperationError, LLMError
from aether.memory.tiers.tasks import (
    Goal,
    Suggestion,
    Task,
    TaskStatus,
    parse_due,
    suggestion_order,
)
from aether.operations.base import Caller, NoArgs, for_the_cli, operation
from aether.operations.parts import Parts
from aether.operations.ranges import PRIORITY

__all__ = [
    "GoalList",
    "GoalProgress",
    "Suggestions",
    "TaskList",
    "goal_add",
    "goal_done",
    "goal_list",
    "task_add",
    "task_done",
    "task_edit",
    "task_list",
    "task_reopen",
    "task_suggest",
]

log = structlog.get_logger(__name__)

SUGGEST_MAX_TASKS = 50
"""Open tasks looked at by ``task_suggest`` (the first by the deterministic order)."""
MENTION_RELEVANCE = 0.5
"""A memory found for a task's title counts as a mention from this relevance on."""

Title = Annotated[
    str,
    Field(
        description="What is to be done, in a line.",
        json_schema_extra=for_the_cli(argument="title"),
    ),
]
TaskId = Annotated[
    str,
    Field(
        description="The task's id or a unique prefix (4+ chars).",
        json_schema_extra=for_the_cli(argument="task_id"),
    ),
]
GoalId = Annotated[
    str,
    Field(
        description="The goal's id or a unique prefix (4+ chars).",
        json_schema_extra=for_the_cli(argument="goal_id"),
    ),
]
PRIORITY_FLAGS = for_the_cli(flags=("--priority", "-p"))
Notes = Annotated[str, Field(description="Details, links, context.")]


def _task_line(task: Task) -> str:
    due = f" due {task.due}" if task.due else ""
    return f"[{task.id}] p{task.priority} {task.status}{due}: {task.title}"


def _checked_due(value: str | None) -> str | None:
    """A due date that is a date (an empty one, kept, clears it in an edit)."""
    if value is not None and value.strip():
        try:
            parse_due(value)
        except InvalidOperationError as e:
            raise ValueError(f"{value[:40]!r} is not a date: use YYYY-MM-DD") from e
    return value


class TaskAddArgs(BaseModel):
    """Arguments of ``task_add``."""

    title: Title
    priority: Annotated[int, PRIORITY.field("1 (highest) to 5 (lowest).", extra=PRIORITY_FLAGS)] = 3
    due: str | None = Field(default=None, description="Due date, YYYY-MM-DD.")
    goal: str | None = Field(default=None, description="The goal it serves (id or prefix).")
    notes: Notes = ""

    _due_is_a_date = field_validator("due")(_checked_due)


@operation(read_only=False, brief=lambda t: f"added task {_task_line(t)}")
async def task_add(parts: Parts, caller: Caller, args: TaskAddArgs) -> Task:
    """Add an open task, optionally due on a date and towards a goal."""
    return await parts.tasks.add(
        args.title, args.priority, args.due, goal=args.goal, notes=args.notes, now=caller.clock()
    )


class TaskListArgs(BaseModel):
    """Arguments of ``task_list``."""

    status: Literal[TaskStatus, "all"] = Field(default="open", description="Which tasks.")
    goal: str | None = Field(default=None, description="Only the tasks of this goal.")


class TaskList(BaseModel):
    """Tasks: open ones by priority, due date and age, then done ones."""

    tasks: list[Task]


def _task_lines(found: TaskList) -> str:
    return "\n".join(_task_line(t) for t in found.tasks) or "no tasks"


@operation(read_only=True, brief=_task_lines)
async def task_list(parts: Parts, caller: Caller, args: TaskListArgs) -> TaskList:
    """The tasks of one status (default open), of one goal if given."""
    status = None if args.status == "all" else args.status
    return TaskList(tasks=await parts.tasks.list(status, goal=args.goal))


class TaskIdArgs(BaseModel):
    """Arguments naming one task."""

    id: TaskId


@operation(read_only=False, brief=lambda t: f"done {_task_line(t)}")
async def task_done(parts: Parts, caller: Caller, args: TaskIdArgs) -> Task:
    """Mark a task done; it leaves the open list."""
    return await parts.tasks.done(args.id, now=caller.clock())


@operation(read_only=False, brief=lambda t: f"reopened {_task_line(t)}")
async def task_reopen(parts: Parts, caller: Caller, args: TaskIdArgs) -> Task:
    """Open a done task again, as it was before."""
    return await parts.tasks.reopen(args.id)


class TaskEditArgs(BaseModel):
    """Arguments of ``task_edit``: each field given is changed, the others kept."""

    id: TaskId
    title: str | None = Field(default=None, description="A new title.")
    priority: Annotated[
        int | None, PRIORITY.field("A new priority, 1 to 5.", extra=PRIORITY_FLAGS)
    ] = None
    due: str | None = Field(default=None, description="A new due date; empty clears it.")
    goal: str | None = Field(default=None, description="A new goal; empty clears it.")
    notes: str | None = Field(default=None, description="New notes.")

    _due_is_a_date = field_validator("due")(_checked_due)


@operation(read_only=False, brief=lambda t: f"edited {_task_line(t)}")
async def task_edit(parts: Parts, caller: Caller, args: TaskEditArgs) -> Task:
    """Change a task's title, priority, due date, goal or notes."""
    return await parts.tasks.edit(
        args.id,
        title=args.title,
        priority=args.priority,
        due=args.due,
        goal=args.goal,
        notes=args.notes,
    )


class Suggestions(BaseModel):
    """Open tasks in the suggested order, each with its reasons.

    ``ranked_by`` is ``model`` when the configured model ranked them, ``rules`` for the
    deterministic order (no model, or its answer was unusable: ``note`` says why).
    """

    ranked_by: Literal["model", "rules"]
    suggestions: list[Suggestion]
    note: str = ""


def _suggestion_lines(found: Suggestions) -> str:
    lines = [f"{_task_line(s.task)} ({'; '.join(s.reasons)})" for s in found.suggestions]
    return "\n".join(lines) or "no open tasks"


@operation(read_only=True, brief=_suggestion_lines)
async def task_suggest(parts: Parts, caller: Caller, args: NoArgs) -> Suggestions:
    """What to work on next: open tasks ranked with their goals and memory context.

    With a model configured, the model ranks them and says why; otherwise (or when its
    answer is unusable) the order is: overdue, due soon, priority, towards an open goal,
    recently mentioned in memory, oldest.
    """
    tasks = await parts.tasks.list("open")
    goals = await parts.goals.all()
    memories: dict[str, list[str]] = {}
    mentioned: dict[str, float] = {}
    today = datetime.fromtimestamp(caller.clock(), UTC).date()
    for task in suggestion_order(tasks, goals, {}, today)[:SUGGEST_MAX_TASKS]:
        hits = await parts.search.search(task.task.title, limit=3)
        relevant = [h for h in hits if h.relevance >= MENTION_RELEVANCE]
        memories[task.task.id] = [h.content[:300] for h in relevant]
        if relevant:
            mentioned[task.task.id] = max(float(h.doc.get("timestamp", 0.0)) for h in relevant)
    ranked = suggestion_order(tasks, goals, mentioned, today)[:SUGGEST_MAX_TASKS]
    if caller.llm is None or not ranked:
        return Suggestions(ranked_by="rules", suggestions=ranked)
    try:
        return await _model_ranking(caller, ranked, goals, memories, today.isoformat())
    except (LLMError, ValueError, KeyError, TypeError) as e:
        log.info("task suggestions fell back to the rules", error=str(e))
        note = f"the model's ranking was unusable ({str(e)[:120]}): ranked by the rules"
        return Suggestions(ranked_by="rules", suggestions=ranked, note=note)


async def _model_ranking(
    caller: Caller,
    ranked: list[Suggestion],
    goals: list[Goal],
    memories: dict[str, list[str]],
    today: str,
) -> Suggestions:
    """The model's order of ``ranked``; tasks it leaves out follow in the rules' order."""
    assert caller.llm is not None
    titles = {g.id: g.title for g in goals if g.status == "open"}
    lines = []
    for s in ranked:
        t = s.task
        goal = f" goal: {titles[t.goal]}" if t.goal in titles else ""
        due = f" due {t.due}" if t.due else ""
        notes = f" notes: {t.notes[:200]}" if t.notes else ""
        lines.append(f"- id {t.id}: p{t.priority}{due}{goal}: {t.title}{notes}")
        lines += [f"    memory: {m}" for m in memories.get(t.id, [])]
    prompt = (
        f"Today is {today}. Open goals: {', '.join(titles.values()) or 'none'}.\n"
        "Open tasks, with what memory holds about each:\n" + "\n".join(lines) + "\n\n"
        "Rank the tasks: what to do first. Answer only JSON "
        '[{"id": "...", "reason": "..."}], every task once, first to do first.'
    )
    raw = await caller.llm.complete("You prioritise an operator's tasks.", prompt, 800)
    items = json.loads(raw[raw.index("[") : raw.rindex("]") + 1])
    by_id = {s.task.id: s for s in ranked}
    out: list[Suggestion] = []
    for item in items:
        found = by_id.pop(str(item["id"]), None)
        if found is not None:
            out.append(Suggestion(task=found.task, reasons=[str(item.get("reason", ""))[:300]]))
    if not out:
        raise ValueError("it named none of the tasks")
    return Suggestions(ranked_by="model", suggestions=[*out, *by_id.values()])


class GoalAddArgs(BaseModel):
    """Arguments of ``goal_add``."""

    title: Annotated[
        str,
        Field(
            description="The objective, in a line.", json_schema_extra=for_the_cli(argument="title")
        ),
    ]
    notes: Notes = ""


@operation(read_only=False, brief=lambda g: f"added goal [{g.id}] {g.title}")
async def goal_add(parts: Parts, caller: Caller, args: GoalAddArgs) -> Goal:
    """Add a goal: a larger objective that tasks roll up to."""
    return await parts.goals.add(args.title, args.notes, now=caller.clock())


class GoalListArgs(BaseModel):
    """Arguments of ``goal_list``."""

    status: Literal[TaskStatus, "all"] = Field(default="open", description="Which goals.")


class GoalProgress(Goal):
    """A goal with how many of its tasks are open and done."""

    open_tasks: int = 0
    done_tasks: int = 0


class GoalList(BaseModel):
    """Goals, open ones first, each with its task counts."""

    goals: list[GoalProgress]


def _goal_lines(found: GoalList) -> str:
    lines = [f"[{g.id}] {g.status}: {g.title} ({g.open_tasks} open tasks)" for g in found.goals]
    return "\n".join(lines) or "no goals"


@operation(read_only=True, brief=_goal_lines)
async def goal_list(parts: Parts, caller: Caller, args: GoalListArgs) -> GoalList:
    """The goals of one status (default open), with how many tasks each has."""
    goals = await parts.goals.list(None if args.status == "all" else args.status)
    tasks = await parts.tasks.all()
    counts: dict[str, dict[str, int]] = {"open": {}, "done": {}}
    for t in tasks:
        if t.goal:
            counts[t.status][t.goal] = counts[t.status].get(t.goal, 0) + 1
    return GoalList(
        goals=[
            GoalProgress(
                **g.model_dump(),
                open_tasks=counts["open"].get(g.id, 0),
                done_tasks=counts["done"].get(g.id, 0),
            )
            for g in goals
        ]
    )


class GoalIdArgs(BaseModel):
    """Arguments naming one goal."""

    id: GoalId


@operation(read_only=False, brief=lambda g: f"done goal [{g.id}] {g.title}")
async def goal_done(parts: Parts, caller: Caller, args: GoalIdArgs) -> Goal:
    """Mark a goal done (its tasks stay as they are)."""
    if not args.id.strip():
        raise InvalidOperationError("a goal id is needed")
    return await parts.goals.done(args.id, now=caller.clock())
