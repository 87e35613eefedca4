"""Lists for people: a rich table on a terminal, aligned plain columns when piped.

Every list command prints through :func:`emit_table`, so lists look alike: a header,
one row per item, ids never cut (people copy them), long text wrapped on a terminal.
Piped into ``grep``, ``cut`` or a file, the same table prints without borders or
colour at its natural width, so no cell is cut or wrapped there either.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from aether.interfaces.common import console, emit, nothing_found

Row = TypeVar("Row")

# wide enough that a piped table never wraps: each line is as long as its content
_PIPE_WIDTH = 100_000


@dataclass(frozen=True)
class Column(Generic[Row]):
    """One column of a list.

    Args:
        header: the column's title.
        cell: what the column shows for a row (printed with ``str``).
        whole: never cut or wrap the cell (ids a person copies).
        justify: ``right`` for numbers.
    """

    header: str
    cell: Callable[[Row], object]
    whole: bool = False
    justify: Literal["left", "right"] = "left"


def _text(value: object) -> str:
    return "-" if value is None or value == "" else str(value)


def build_table(columns: Sequence[Column[Row]], rows: Sequence[Row], *, plain: bool) -> Table:
    """The rich table of ``rows`` (``plain``: no borders, for pipes and files)."""
    table = Table(
        box=None if plain else box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=not plain,
        header_style="" if plain else "bold",
    )
    cells = [[_text(col.cell(row)) for col in columns] for row in rows]
    for i, col in enumerate(columns):
        widest = max((len(line[i]) for line in cells), default=0)
        table.add_column(
            col.header,
            justify=col.justify,
            no_wrap=col.whole,
            min_width=max(widest, len(col.header)) if col.whole else None,
            overflow="fold",
        )
    for line in cells:
        table.add_row(*(escape(cell) for cell in line))  # user text may hold "[/]"
    return table


def print_table(columns: Sequence[Column[Row]], rows: Sequence[Row]) -> None:
    """Print ``rows`` for people: a table on a terminal, plain columns otherwise."""
    if console.is_terminal:
        console.print(build_table(columns, rows, plain=False))
        return
    buffer = io.StringIO()
    plain = Console(file=buffer, width=_PIPE_WIDTH, color_system=None, highlight=False)
    plain.print(build_table(columns, rows, plain=True))
    for line in buffer.getvalue().splitlines():
        sys.stdout.write(line.rstrip() + "\n")


def emit_table(
    rows: Sequence[Row],
    as_json: bool,
    columns: Sequence[Column[Row]],
    *,
    data: Any = None,
    empty: str = "nothing found",
) -> None:
    """Print a list: JSON (``data``, else the rows), or a table; exit 2 saying ``empty``.

    Args:
        rows: the items, in order.
        as_json: print JSON instead of the table.
        columns: what the table shows of each row.
        data: what ``--json`` prints when it differs from ``rows``.
        empty: the one line people see when there are no rows (exit 2).
    """
    emit(
        rows if data is None else data,
        as_json,
        lambda: print_table(columns, rows) if rows else None,
    )
    if not rows:
        nothing_found(empty, as_json)
