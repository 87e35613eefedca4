"""``aether identity bootstrap|show|set|prompt``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aether.interfaces.common import (
    AppState,
    JsonOpt,
    arguments,
    call,
    emit,
    fail,
    group,
    state,
    wants_json,
)
from aether.operations import NoArgs, ranges
from aether.operations import identity as identity_ops

app = group("Identity: bootstrap from markdown, show, set, prompt.")


def identity_dir(st: AppState, given: Path | None = None) -> Path:
    """The directory to bootstrap from: given, configured, or the default identity."""
    from aether.identity.bootstrap import default_identity_dir

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
    args = arguments(ctx, identity_ops.BootstrapArgs, directory=directory, force=force)
    done = call(ctx, identity_ops.identity_bootstrap, args)
    emit(
        done,
        wants_json(ctx, json_),
        lambda: print(
            f"identity {'replaced' if done.replaced else 'bootstrapped'} from {done.source}: "
            f"{', '.join(done.files)}"
        ),
    )


@app.command()
def show(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Show the agent's and the operator's profile (from Redis)."""
    identity = call(ctx, identity_ops.identity_get, NoArgs())
    if not identity.bootstrapped:  # the folder's, not yet in Redis: nothing to show
        message = "no identity in Redis: run 'aether identity bootstrap'"
        fail(message, state(ctx).json, kind="identity")

    def render() -> None:
        for title, fields in (("agent", identity.agent), ("user", identity.user)):
            print(f"[{title}]")
            for key, value in sorted(fields.items()):
                print(f"  {key}: {value}")
        print(f"[files] {', '.join(identity.files)}")

    data = {"agent": identity.agent, "user": identity.user, "files": identity.files}
    emit(data, wants_json(ctx, json_), render)


@app.command("set")
def set_(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="agent or user")],
    field: Annotated[str, typer.Argument(help="Field name, e.g. voice_style or timezone.")],
    value: Annotated[str, typer.Argument(help="The new value.")],
    json_: JsonOpt = False,
) -> None:
    """Set one profile field (journaled: a rollback restores the old value)."""
    if target not in ("agent", "user"):
        fail(f"target must be 'agent' or 'user', not {target!r}", state(ctx).json, kind="identity")
    args = arguments(ctx, identity_ops.FieldArgs, target=target, field=field, value=value)
    done = call(ctx, identity_ops.identity_set, args)
    emit(done, wants_json(ctx, json_), lambda: print(f"{target}.{field} set"))


@app.command()
def prompt(
    ctx: typer.Context,
    max_tokens: Annotated[
        int | None, ranges.MAX_TOKENS.option("--max-tokens", help="Token budget.")
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """Print the system prompt built from Redis now."""
    args = arguments(ctx, identity_ops.PromptArgs, max_tokens=max_tokens)
    built = call(ctx, identity_ops.identity_prompt, args)
    emit(built, wants_json(ctx, json_), lambda: print(built.text))
