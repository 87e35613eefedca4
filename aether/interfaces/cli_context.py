"""``aether context preview``: what the model would be sent for a query."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from aether.interfaces.common import (
    arguments,
    console,
    emit,
    group,
    open_aether,
    run,
    state,
    wants_json,
)
from aether.interfaces.tables import Column, print_table
from aether.operations import Caller, ranges
from aether.operations import identity as identity_ops

app = group("The context layer: preview an assembled context.")


@app.command()
def preview(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What the context is for.")],
    max_tokens: Annotated[int, ranges.MAX_TOKENS.option("--max-tokens", help="The budget.")] = 2000,
    session: Annotated[
        str | None, typer.Option("--session", help="Include this chat session's history.")
    ] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Assemble the context for QUERY and show each section with its token count."""
    st = state(ctx)

    args = arguments(
        ctx, identity_ops.ContextArgs, query=query, max_tokens=max_tokens, session=session
    )

    async def body() -> dict[str, Any]:
        async with open_aether(st) as agent:
            found = await identity_ops.context_assemble(agent, Caller("cli"), args)
            data: dict[str, Any] = found.model_dump()
            return data

    data = run(ctx, body)

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
