"""``aether identity bootstrap|show|set|prompt``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from aether.interfaces.commands import Out, command
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
from aether.operations import identity as identity_ops

app = group(
    "Identity: bootstrap from markdown, show, set, prompt.",
    order=("bootstrap", "show", "set", "prompt"),
)


def identity_dir(st: AppState, given: Path | None = None) -> Path:
    """The directory to bootstrap from: given, configured, or the default identity."""
    from aether.identity.bootstrap import default_identity_dir

    return given or st.settings.identity_dir or default_identity_dir()


@command(app, "bootstrap", identity_ops.identity_bootstrap, positional={"directory": "directory"})
def _bootstrapped(done: identity_ops.Bootstrapped, out: Out[identity_ops.Bootstrapped]) -> None:
    """Load identity markdown into Redis (all files or none)."""
    verb = "replaced" if done.replaced else "bootstrapped"
    out.emit(done, f"identity {verb} from {done.source}: {', '.join(done.files)}")


@command(app, "show", identity_ops.identity_get)
def _identity(identity: identity_ops.Identity, out: Out[identity_ops.Identity]) -> None:
    """Show the agent's and the operator's profile (from Redis)."""
    if not identity.bootstrapped:  # the folder's, not yet in Redis: nothing to show
        fail("no identity in Redis: run 'aether identity bootstrap'", out.json, kind="identity")

    def render() -> None:
        for title, fields in (("agent", identity.agent), ("user", identity.user)):
            print(f"[{title}]")
            for key, value in sorted(fields.items()):
                print(f"  {key}: {value}")
        print(f"[files] {', '.join(identity.files)}")

    out.emit({"agent": identity.agent, "user": identity.user, "files": identity.files}, render)


@command(app, "prompt", identity_ops.identity_prompt)
def _prompt(built: identity_ops.Prompt, out: Out[identity_ops.Prompt]) -> None:
    """Print the system prompt built from Redis now."""
    out.emit(built, built.text)


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
