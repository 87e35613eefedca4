"""``aether context preview``: what the model would be sent for a query."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from aether.interfaces.common import (
    JsonOpt,
    arguments,
    call,
    console,
    emit,
    group,
    wants_json,
)
from aether.interfaces.tables import Column, print_table
from aether.operations import identity as identity_ops
from aether.operations import ranges

app = group("The context layer: preview an assembled context.")


@app.command()
def preview(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What the context is for.")],
    max_tokens: Annotated[int, ranges.MAX_TOKENS.option("--max-tokens", help="The budget.")] = 2000,
    session: Annotated[
        str | None, typer.Option("--session", help="Include this chat session's history.")
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """Assemble the context for QUERY and show each section with its token count."""
    args = arguments(
        ctx, identity_ops.ContextArgs, query=query, max_tokens=max_tokens, session=session
    )
    data: dict[str, Any] = call(ctx, identity_ops.context_assemble, args).model_dump()

    def render() -> None:
        # the same table as every list: borders on a terminal, plain columns in a pipe
        total = {"name": "total", "tokens": data["tokens"], "budget": max_tokens, "items": ""}
        print_table(
            [
                Column("section", lambda s: s["name"], whole=True),
                Column("tokens", lambda s: s["tokens"], justify="right"),
                Column("budget", lambda s: s["budget"], justify="right"),
                Column("items", lambda s: s["items"], justify="right"),
            ],
            [*data["sections"], total],
        )
        for message in data["messages"]:
            if console.is_terminal:
                console.rule(message["role"])
            else:
                print(f"\n== {message['role']} ==")
            console.print(message.get("content") or "", highlight=False, markup=False)

    emit(data, wants_json(ctx, json_), render)
