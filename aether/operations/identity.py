"""Identity and context operations: who the agent is, and what a model would be sent."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from aether.operations.base import Caller, NoArgs, operation
from aether.operations.parts import Parts
from aether.operations.ranges import MAX_TOKENS

__all__ = ["ContextSection", "Identity", "context_assemble", "identity_get"]


class Identity(BaseModel):
    """The agent's and the operator's profiles."""

    agent: dict[str, Any]
    user: dict[str, Any]


@operation(read_only=True, agent=False)
async def identity_get(parts: Parts, caller: Caller, args: NoArgs) -> Identity:
    """Who the agent is and who its operator is.

    The agent's name, role and voice; the operator's name, time zone and preferences:
    the profiles the system prompt is built from.
    """
    identity = await parts.identity.load()
    return Identity(agent=dict(identity.agent), user=dict(identity.user))


class ContextArgs(BaseModel):
    """Arguments of ``context_assemble``."""

    query: str = Field(description="The message the context is for.")
    max_tokens: Annotated[int, MAX_TOKENS.field("The token budget of the context.")] = 2000
    session: str | None = Field(
        default=None, description="The conversation, for its recent messages."
    )


class ContextSection(BaseModel):
    """One section of an assembled context and its budget."""

    name: str
    tokens: int
    budget: int


class Assembled(BaseModel):
    """An assembled context: its messages, tokens, and tokens per section."""

    tokens: int
    sections: list[ContextSection]
    messages: list[dict[str, Any]]


@operation(read_only=True, agent=False)
async def context_assemble(parts: Parts, caller: Caller, args: ContextArgs) -> Assembled:
    """Build the messages aether would send a model for ``query``.

    Identity, relevant memories and beliefs, recent conversation, fitted into
    ``max_tokens``.
    """
    ctx = await parts.context.assemble(args.query, args.max_tokens, session=args.session)
    return Assembled(
        tokens=ctx.tokens,
        sections=[
            ContextSection(name=s.name, tokens=s.tokens, budget=s.budget) for s in ctx.sections()
        ],
        messages=[dict(m) for m in ctx.messages()],
    )
