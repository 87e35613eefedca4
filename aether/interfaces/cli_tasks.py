"""``aether task ...`` and ``aether goal ...``: faces over ``aether.operations.tasks``."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from aether.interfaces.common import (
    JsonOpt,
    about,
    arguments,
    call,
    emit,
    group,
    plural,
    wants_json,
)
from aether.interfaces.tables import Column, emit_table
from aether.memory.tiers.tasks import Suggestion, Task, TaskStatus
from aether.operations import ranges
from aether.operations import tasks as ops
from aether.operations.base import NoArgs

task_app = group("Tasks, optionally towards goals (open ones feed the heartbeat).")
goal_app = group("Goals: larger objectives that tasks roll up to.")
Which = Literal[TaskStatus, "all"]

TASK_COLUMNS: list[Column[Task]] = [
    Column("id", lambda t: t.id, whole=True),
    Column("priority", lambda t: f"p{t.priority}"),
    Column("status", lambda t: t.status),
    Column("due", lambda t: t.due, whole=True),
    Column("goal", lambda t: t.goal, whole=True),
    Column("title", lambda t: t.title),
]


def _said(task: Task, what: str) -> str:
    return f"{what} {task.id}: {task.title}"


@task_app.command("add")
def task_add(
    ctx: typer.Context,
    title: str,
    priority: Annotated[
        int, ranges.PRIORITY.option("--priority", "-p", help=about(ops.TaskAddArgs, "priority"))
    ] = 3,
    due: Annotated[str | None, typer.Option("--due", help="YYYY-MM-DD.")] = None,
    goal: Annotated[str | None, typer.Option("--goal", help=about(ops.TaskAddArgs, "goal"))] = None,
    notes: Annotated[str, typer.Option("--notes", help=about(ops.TaskAddArgs, "notes"))] = "",
    json_: JsonOpt = False,
) -> None:
    """Add an open task; prints its id."""
    args = arguments(
        ctx, ops.TaskAddArgs, title=title, priority=priority, due=due, goal=goal, notes=notes
    )
    task = call(ctx, ops.task_add, args)
    emit(task.model_dump(), wants_json(ctx, json_), lambda: print(task.id))


@task_app.command("list")
def task_list(
    ctx: typer.Context,
    status: Annotated[Which, typer.Option("--status", help="Which tasks.")] = "open",
    goal: Annotated[
        str | None, typer.Option("--goal", help=about(ops.TaskListArgs, "goal"))
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """Tasks: open ones by priority and due date."""
    found = call(ctx, ops.task_list, arguments(ctx, ops.TaskListArgs, status=status, goal=goal))
    empty = "no open tasks" if status == "open" else "no tasks"
    data = [t.model_dump() for t in found.tasks]
    emit_table(found.tasks, wants_json(ctx, json_), TASK_COLUMNS, data=data, empty=empty)


@task_app.command("done")
def task_done(ctx: typer.Context, task_id: str, json_: JsonOpt = False) -> None:
    """Mark a task done (by id or unique prefix)."""
    task = call(ctx, ops.task_done, arguments(ctx, ops.TaskIdArgs, id=task_id))
    emit(task.model_dump(), wants_json(ctx, json_), lambda: print(_said(task, "done")))


@task_app.command("reopen")
def task_reopen(ctx: typer.Context, task_id: str, json_: JsonOpt = False) -> None:
    """Open a done task again (by id or unique prefix)."""
    task = call(ctx, ops.task_reopen, arguments(ctx, ops.TaskIdArgs, id=task_id))
    emit(task.model_dump(), wants_json(ctx, json_), lambda: print(_said(task, "reopened")))


@task_app.command("edit")
def task_edit(
    ctx: typer.Context,
    task_id: str,
    title: Annotated[
        str | None, typer.Option("--title", help=about(ops.TaskEditArgs, "title"))
    ] = None,
    priority: Annotated[
        int | None,
        ranges.PRIORITY.option("--priority", "-p", help=about(ops.TaskEditArgs, "priority")),
    ] = None,
    due: Annotated[str | None, typer.Option("--due", help=about(ops.TaskEditArgs, "due"))] = None,
    goal: Annotated[
        str | None, typer.Option("--goal", help=about(ops.TaskEditArgs, "goal"))
    ] = None,
    notes: Annotated[
        str | None, typer.Option("--notes", help=about(ops.TaskEditArgs, "notes"))
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """Change a task's title, priority, due date, goal or notes (by id or prefix).

    An empty --due or --goal ("") clears it.
    """
    args = arguments(
        ctx,
        ops.TaskEditArgs,
        id=task_id,
        title=title,
        priority=priority,
        due=due,
        goal=goal,
        notes=notes,
    )
    task = call(ctx, ops.task_edit, args)
    emit(task.model_dump(), wants_json(ctx, json_), lambda: print(_said(task, "edited")))


@task_app.command("suggest")
def task_suggest(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """What to work on next: open tasks ranked with their goals and memory context.

    With an LLM configured the model ranks them and says why; otherwise the order is:
    overdue, due within 3 days, priority, towards an open goal, recently mentioned in
    memory, oldest.
    """
    found = call(ctx, ops.task_suggest, NoArgs(), llm=True)
    columns: list[Column[Suggestion]] = [
        Column("#", lambda s: found.suggestions.index(s) + 1, justify="right"),
        Column("id", lambda s: s.task.id, whole=True),
        Column("task", lambda s: s.task.title),
        Column("why", lambda s: "; ".join(s.reasons)),
    ]
    as_json = wants_json(ctx, json_)
    data = found.model_dump()
    emit_table(found.suggestions, as_json, columns, data=data, empty="no open tasks")
    if not as_json:
        how = "the model" if found.ranked_by == "model" else "the rules (no model configured)"
        print(found.note or f"ranked by {how}")


GOAL_COLUMNS: list[Column[ops.GoalProgress]] = [
    Column("id", lambda g: g.id, whole=True),
    Column("status", lambda g: g.status),
    Column("title", lambda g: g.title),
    Column("tasks", lambda g: f"{plural(g.open_tasks, 'open task')}, {g.done_tasks} done"),
]


@goal_app.command("add")
def goal_add(
    ctx: typer.Context,
    title: str,
    notes: Annotated[str, typer.Option("--notes", help=about(ops.GoalAddArgs, "notes"))] = "",
    json_: JsonOpt = False,
) -> None:
    """Add a goal; prints its id (aether task add --goal ID links tasks to it)."""
    goal = call(ctx, ops.goal_add, arguments(ctx, ops.GoalAddArgs, title=title, notes=notes))
    emit(goal.model_dump(), wants_json(ctx, json_), lambda: print(goal.id))


@goal_app.command("list")
def goal_list(
    ctx: typer.Context,
    status: Annotated[Which, typer.Option("--status", help="Which goals.")] = "open",
    json_: JsonOpt = False,
) -> None:
    """Goals, open ones first, with their task counts."""
    found = call(ctx, ops.goal_list, arguments(ctx, ops.GoalListArgs, status=status))
    empty = "no open goals" if status == "open" else "no goals"
    data = [g.model_dump() for g in found.goals]
    emit_table(found.goals, wants_json(ctx, json_), GOAL_COLUMNS, data=data, empty=empty)


@goal_app.command("done")
def goal_done(ctx: typer.Context, goal_id: str, json_: JsonOpt = False) -> None:
    """Mark a goal done (by id or unique prefix); its tasks stay as they are."""
    goal = call(ctx, ops.goal_done, arguments(ctx, ops.GoalIdArgs, id=goal_id))
    emit(goal.model_dump(), wants_json(ctx, json_), lambda: print(f"done {goal.id}: {goal.title}"))
