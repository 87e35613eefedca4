"""``aether identity bootstrap|show|set|prompt``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from redis.asyncio import Redis

from aether.checkpoints.manager import Checkpoints
from aether.identity.bootstrap import default_identity_dir
from aether.identity.profile import Identity, IdentityStore, Target
from aether.identity.prompt import SystemPrompt, build_system_prompt
from aether.interfaces.common import (
    AppState,
    JsonOpt,
    emit,
    group,
    redis_client,
    run,
    state,
    wants_json,
)
from aether.operations import ranges
from aether.store.state import Store

app = group("Identity: bootstrap from markdown, show, set, prompt.")


def identity_store(st: AppState, client: Redis, actor: str = "cli") -> IdentityStore:
    """The identity store of the invocation's namespace."""
    return IdentityStore(
        Store(client, st.keys, actor=actor),
        Checkpoints.from_settings(client, st.keys, st.settings),
    )


def identity_dir(st: AppState, given: Path | None = None) -> Path:
    """The directory to bootstrap from: given, configured, or the default identity."""
    return given or st.settings.identity_dir or default_identity_dir()


@app.command()
def bootstrap(
    ctx: typer.Context,
    directory: Annotated[
        Path | None, typer.Argument(help="Directory with AETHER*.md, Core_Self.md, USER.md.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing identity.")] = False,
    json_: JsonOpt = False,
) -> None:
    """Load identity markdown into Redis (all files or none)."""
    st = state(ctx)
    source = identity_dir(st, directory)

    async def body() -> dict[str, object]:
        async with redis_client(st.settings) as client:
            result = await identity_store(st, client).bootstrap(source, force=force)
            return result.__dict__

    result = run(ctx, body)
    emit(
        result,
        wants_json(ctx, json_),
        lambda: print(
            f"identity {'replaced' if result['replaced'] else 'bootstrapped'} from {source}: "
            f"{', '.join(result['files'])}"  # type: ignore[arg-type]
        ),
    )


@app.command()
def show(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Show the agent's and the operator's profile (from Redis)."""
    st = state(ctx)

    async def body() -> Identity:
        async with redis_client(st.settings) as client:
            return await identity_store(st, client).load()

    identity = run(ctx, body)

    def render() -> None:
        for title, fields in (("agent", identity.agent), ("user", identity.user)):
            print(f"[{title}]")
            for key, value in sorted(fields.items()):
                print(f"  {key}: {value}")
        print(f"[files] {', '.join(sorted(identity.files))}")

    emit(
        {"agent": identity.agent, "user": identity.user, "files": sorted(identity.files)},
        wants_json(ctx, json_),
        render,
    )


@app.command("set")
def set_(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="agent or user")],
    field: Annotated[str, typer.Argument(help="Field name, e.g. voice_style or timezone.")],
    value: Annotated[str, typer.Argument(help="The new value.")],
    json_: JsonOpt = False,
) -> None:
    """Set one profile field (journaled: a rollback restores the old value)."""
    st = state(ctx)

    async def body() -> None:
        async with redis_client(st.settings) as client:
            await identity_store(st, client).set_field(_target(target), field, value)

    run(ctx, body)
    emit(
        {"target": target, "field": field, "value": value},
        wants_json(ctx, json_),
        lambda: print(f"{target}.{field} set"),
    )


def _target(value: str) -> Target:
    if value == "agent":
        return "agent"
    if value == "user":
        return "user"
    from aether.errors import IdentityError

    raise IdentityError(f"target must be 'agent' or 'user', not {value!r}")


@app.command()
def prompt(
    ctx: typer.Context,
    max_tokens: Annotated[
        int | None, ranges.MAX_TOKENS.option("--max-tokens", help="Token budget.")
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """Print the system prompt built from Redis now."""
    st = state(ctx)

    async def body() -> SystemPrompt:
        async with redis_client(st.settings) as client:
            return build_system_prompt(await identity_store(st, client).load(), max_tokens)

    built = run(ctx, body)
    emit(built.__dict__, wants_json(ctx, json_), lambda: print(built.text))
