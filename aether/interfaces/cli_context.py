"""``aether context preview``: what the model would be sent for a query."""

from __future__ import annotations

from typing import Any

from aether.interfaces.commands import Out, command
from aether.interfaces.common import console, group
from aether.interfaces.tables import Column, print_table
from aether.operations import identity as identity_ops

app = group("The context layer: preview an assembled context.")


@command(app, "preview", identity_ops.context_assemble, positional={"query": "query"})
def _context(assembled: identity_ops.Assembled, out: Out[identity_ops.Assembled]) -> None:
    """Assemble the context for QUERY and show each section with its token count."""
    data: dict[str, Any] = assembled.model_dump()

    def render() -> None:
        # the same table as every list: borders on a terminal, plain columns in a pipe
        budget = out.args.max_tokens
        total = {"name": "total", "tokens": data["tokens"], "budget": budget, "items": ""}
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

    out.emit(data, render)
