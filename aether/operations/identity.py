"""Identity and context operations: who the agent is, and what a model would be sent."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from aether.operations.base import AsOf, Caller, NoArgs, operation
from aether.operations.parts import Parts
from aether.operations.ranges import MAX_TOKENS

__all__ = [
    "ContextSection",
    "Identity",
    "context_assemble",
    "identity_bootstrap",
    "identity_get",
    "identity_prompt",
    "identity_set",
]


class Identity(BaseModel):
    """The agent's and the operator's profiles."""

    agent: dict[str, Any]
    user: dict[str, Any]
    files: list[str] = Field(default_factory=list, description="the identity's documents")
    bootstrapped: bool = Field(
        default=True,
        description="false before the first bootstrap: the identity folder's, not yet in Redis",
    )


@operation(read_only=True, agent=False)
async def identity_get(parts: Parts, caller: Caller, args: NoArgs) -> Identity:
    """Who the agent is and who its operator is.

    The agent's name, role and voice; the operator's name, time zone and preferences:
    the profiles the system prompt is built from.
    """
    folder = parts.assembler.identity_dir  # before the first bootstrap: read, never written
    identity = await (parts.identity.current(folder) if folder else parts.identity.load())
    return Identity(
        agent=dict(identity.agent),
        user=dict(identity.user),
        files=sorted(identity.files),
        bootstrapped=await parts.identity.is_bootstrapped(),
    )


class BootstrapArgs(BaseModel):
    """Arguments of ``identity_bootstrap``."""

    directory: Path | None = Field(
        default=None,
        description="A folder with AETHER*.md, Core_Self.md, USER.md (default: the "
        "configured identity folder, else the packaged one).",
    )
    force: bool = Field(default=False, description="Replace an identity already in Redis.")


class Bootstrapped(BaseModel):
    """What a bootstrap wrote."""

    source: str
    files: list[str]
    agent_fields: list[str]
    user_fields: list[str]
    replaced: bool
    checkpoint: str | None


@operation(read_only=False, agent=False, mcp=False)
async def identity_bootstrap(parts: Parts, caller: Caller, args: BootstrapArgs) -> Bootstrapped:
    """Load identity markdown into Redis, all files or none (a replacement checkpoints first).

    It reads a folder on the machine the command runs on: not an MCP tool.
    """
    from aether.identity.bootstrap import default_identity_dir

    source = (args.directory or parts.settings.identity_dir or default_identity_dir()).resolve()
    done = await parts.identity.bootstrap(source, force=args.force, actor=caller.actor)
    return Bootstrapped(source=str(source), **done.__dict__)


class FieldArgs(BaseModel):
    """Arguments of ``identity_set``."""

    target: Literal["agent", "user"] = Field(description="Whose profile.")
    field: str = Field(min_length=1, description="The field, e.g. voice_style or timezone.")
    value: str = Field(description="Its new value.")


class FieldSet(BaseModel):
    """The field set."""

    target: str
    field: str
    value: str


@operation(read_only=False, agent=False)
async def identity_set(parts: Parts, caller: Caller, args: FieldArgs) -> FieldSet:
    """Set one field of the agent's or the operator's profile.

    Journaled: a rollback restores the old value.
    """
    await parts.identity.set_field(args.target, args.field, args.value, actor=caller.actor)
    return FieldSet(target=args.target, field=args.field, value=args.value)


class PromptArgs(BaseModel):
    """Arguments of ``identity_prompt``."""

    max_tokens: Annotated[int | None, MAX_TOKENS.field("The prompt's token budget.")] = None


class Prompt(BaseModel):
    """The system prompt built from the identity in Redis."""

    text: str
    tokens: int
    sections: list[str]
    dropped: list[str]
    over_budget: bool


@operation(read_only=True, agent=False)
async def identity_prompt(parts: Parts, caller: Caller, args: PromptArgs) -> Prompt:
    """The system prompt the identity in Redis builds now (within a budget, if given)."""
    from aether.identity.prompt import build_system_prompt

    built = build_system_prompt(await parts.identity.load(), args.max_tokens)
    return Prompt(**built.__dict__)


class ContextArgs(BaseModel):
    """Arguments of ``context_assemble``."""

    query: str = Field(description="The message the context is for.")
    max_tokens: Annotated[int, MAX_TOKENS.field("The token budget of the context.")] = 2000
    session: str | None = Field(
        default=None,
        description="The conversation, for its newest messages and the older messages of "
        "its window that hold the query.",
    )
    as_of: AsOf = None

    @field_validator("query")
    @classmethod
    def _says_something(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the query is empty: say what the context is for")
        return value


class ContextSection(BaseModel):
    """One section of an assembled context: its tokens, its budget, how many items."""

    name: str
    tokens: int
    budget: int
    items: int


class ChosenMemory(BaseModel):
    """A memory the context holds, and why: its score and the parts of it."""

    key: str
    score: float
    relevance: float
    recency: float
    importance: float


class Assembled(BaseModel):
    """An assembled context: its messages and text, tokens per section, the memories chosen."""

    query: str
    max_tokens: int
    tokens: int
    sections: list[ContextSection]
    memories: list[ChosenMemory]
    messages: list[dict[str, Any]]
    text: str


@operation(read_only=True, agent=False, memory="search_memory")
async def context_assemble(parts: Parts, caller: Caller, args: ContextArgs) -> Assembled:
    """Build the messages aether would send a model for ``query``.

    Identity, relevant memories and beliefs, recent conversation, fitted into
    ``max_tokens``.
    """
    ctx = await parts.assembler.assemble(args.query, args.max_tokens, session=args.session)
    return Assembled(
        query=args.query,
        max_tokens=args.max_tokens,
        tokens=ctx.tokens,
        sections=[
            ContextSection(name=s.name, tokens=s.tokens, budget=s.budget, items=s.items)
            for s in ctx.sections()
        ],
        memories=[
            ChosenMemory(
                key=m.key,
                score=m.score,
                relevance=m.relevance,
                recency=m.recency,
                importance=m.importance,
            )
            for m in ctx.chosen
        ],
        messages=[dict(m) for m in ctx.messages()],
        text=ctx.text(),
    )
