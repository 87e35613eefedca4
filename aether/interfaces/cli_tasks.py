"""``aether task ...`` and ``aether goal ...``: faces over ``aether.operations.tasks``."""

from __future__ import annotations

from collections.abc import Callable

from aether.interfaces.commands import Out, command
from aether.interfaces.common import group, plural
from aether.interfaces.tables import Column
from aether.memory.tiers.tasks import Goal, Suggestion, Task
from aether.operations import tasks as ops

task_app = group(
    "Tasks, optionally towards goals (open ones feed the heartbeat).",
    order=("add", "list", "done", "reopen", "edit", "suggest"),
)
goal_app = group("Goals: larger objectives that tasks roll up to.", order=("add", "list", "done"))

TASK_COLUMNS: list[Column[Task]] = [
    Column("id", lambda t: t.id, whole=True),
    Column("priority", lambda t: f"p{t.priority}"),
    Column("status", lambda t: t.status),
    Column("due", lambda t: t.due, whole=True),
    Column("goal", lambda t: t.goal, whole=True),
    Column("title", lambda t: t.title),
]
GOAL_COLUMNS: list[Column[ops.GoalProgress]] = [
    Column("id", lambda g: g.id, whole=True),
    Column("status", lambda g: g.status),
    Column("title", lambda g: g.title),
    Column("tasks", lambda g: f"{plural(g.open_tasks, 'open task')}, {g.done_tasks} done"),
]


def _said(what: str) -> Callable[[Task, Out[Task]], None]:
    return lambda task, out: out.emit(task, f"{what} {task.id}: {task.title}")


def _none_open(what: str, args: ops.TaskListArgs | ops.GoalListArgs) -> str:
    return f"no open {what}" if args.status == "open" else f"no {what}"


@command(task_app, "list", ops.task_list)
def _tasks(found: ops.TaskList, out: Out[ops.TaskList]) -> None:
    """Tasks: open ones by priority and due date."""
    data = [t.model_dump() for t in found.tasks]
    out.table(found.tasks, TASK_COLUMNS, data=data, empty=_none_open("tasks", out.args))


@command(task_app, "suggest", ops.task_suggest, llm=True)
def _suggestions(found: ops.Suggestions, out: Out[ops.Suggestions]) -> None:
    """What to work on next: open tasks ranked with their goals and memory context.

    With an LLM configured the model ranks them and says why; otherwise the order is: overdue,
    due within 3 days, priority, towards an open goal, recently mentioned in memory, oldest.
    """
    columns: list[Column[Suggestion]] = [
        Column("#", lambda s: found.suggestions.index(s) + 1, justify="right"),
        Column("id", lambda s: s.task.id, whole=True),
        Column("task", lambda s: s.task.title),
        Column("why", lambda s: "; ".join(s.reasons)),
    ]
    out.table(found.suggestions, columns, data=found.model_dump(), empty="no open tasks")
    if not out.json:
        how = "the model" if found.ranked_by == "model" else "the rules (no model configured)"
        print(found.note or f"ranked by {how}")


@command(goal_app, "list", ops.goal_list)
def _goals(found: ops.GoalList, out: Out[ops.GoalList]) -> None:
    """Goals, open ones first, with their task counts."""
    data = [g.model_dump() for g in found.goals]
    out.table(found.goals, GOAL_COLUMNS, data=data, empty=_none_open("goals", out.args))


@command(goal_app, "done", ops.goal_done)
def _goal_done(goal: Goal, out: Out[Goal]) -> None:
    """Mark a goal done (by id or unique prefix); its tasks stay as they are."""
    out.emit(goal, f"done {goal.id}: {goal.title}")


def _new_id(record: Task | Goal, out: Out[Task | Goal]) -> None:
    out.emit(record, record.id)


command(task_app, "add", ops.task_add, help="Add an open task; prints its id.")(_new_id)
command(task_app, "done", ops.task_done, help="Mark a task done (by id or unique prefix).")(
    _said("done")
)
command(
    task_app, "reopen", ops.task_reopen, help="Open a done task again (by id or unique prefix)."
)(_said("reopened"))
command(
    task_app,
    "edit",
    ops.task_edit,
    help="Change a task's title, priority, due date, goal or notes (by id or prefix).\n\n"
    'An empty --due or --goal ("") clears it.',
)(_said("edited"))
command(
    goal_app,
    "add",
    ops.goal_add,
    help="Add a goal; prints its id (aether task add --goal ID links tasks to it).",
)(_new_id)
