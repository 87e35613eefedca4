"""``aether context preview``: what the model would be sent for a query."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from aether.context.assembly import ScoredMemory
from aether.interfaces import ranges
from aether.interfaces.cli_identity import identity_dir
from aether.interfaces.common import (
    console,
    emit,
    group,
    open_aether,
    run,
    state,
    wants_json,
)

app = group("The context layer: preview an assembled context.")


def _scored(memory: ScoredMemory) -> dict[str, Any]:
    return {
        "key": memory.key,
        "score": memory.score,
        "relevance": memory.relevance,
        "recency": memory.recency,
        "importance": memory.importance,
    }


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

    async def body() -> dict[str, Any]:
        async with open_aether(st) as agent:
            await agent.identity.ensure(identity_dir(st), actor="cli")
            assembler = agent.context
            assembled = await assembler.assemble(query, max_tokens, session=session)
            return {
                "query": query,
                "max_tokens": max_tokens,
                "tokens": assembled.tokens,
                "sections": [
                    {"name": s.name, "tokens": s.tokens, "budget": s.budget, "items": s.items}
                    for s in assembled.sections()
                ],
                "memories": [_scored(m) for m in assembled.chosen],
                "messages": assembled.messages(),
                "text": assembled.text(),
            }

    data = run(ctx, body)

    def render() -> None:
        table = Table(
            "section", "tokens", "budget", "items", title=escape(f"context for {query!r}")
        )
        for s in data["sections"]:
            table.add_row(escape(s["name"]), str(s["tokens"]), str(s["budget"]), str(s["items"]))
        table.add_row("total", str(data["tokens"]), str(max_tokens), "", style="bold")
        console.print(table)
        for message in data["messages"]:
            console.rule(message["role"])
            console.print(message.get("content") or "", highlight=False, markup=False)

    emit(data, wants_json(ctx, json_), render)
