"""The ``aether`` command line (typer).

Exit codes: 0 success, 1 error (one line on stderr, or ``{"error": ...}`` with --json),
2 no results.
"""

from __future__ import annotations

from typing import Annotated

import typer

from aether.config import load_settings
from aether.errors import AetherError
from aether.interfaces import (
    cli_beliefs,
    cli_checkpoint,
    cli_context,
    cli_daemon,
    cli_identity,
    cli_memory,
    cli_redis,
    cli_registry,
    cli_repo,
)
from aether.interfaces.common import AppState, emit, fail, state, wants_json
from aether.logging import configure_logging

app = typer.Typer(
    name="aether",
    help="A Redis Stack-native memory runtime for long-running autonomous agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(help="The effective configuration.")
app.add_typer(config_app, name="config")
app.add_typer(cli_redis.app, name="redis")
app.add_typer(cli_checkpoint.app, name="checkpoint")
app.add_typer(cli_checkpoint.archive_app, name="archive")
app.add_typer(cli_identity.app, name="identity")
app.add_typer(cli_memory.app, name="memory")
app.add_typer(cli_context.app, name="context")
app.add_typer(cli_daemon.maintenance_app, name="maintenance")
cli_daemon.register(app)
cli_beliefs.register(app)
cli_repo.register(app)
cli_registry.register(app)


@app.callback()
def root(
    ctx: typer.Context,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON (every command).")] = False,
) -> None:
    """Build the settings once and configure logging."""
    try:
        settings = load_settings()
    except AetherError as e:
        fail(str(e), json_)
    long_running = ctx.invoked_subcommand == "up"
    configure_logging(settings, console_level="INFO" if long_running else None)
    ctx.obj = AppState(settings=settings, json=json_)


@config_app.command("show")
def config_show(
    ctx: typer.Context,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print the effective configuration, secrets masked."""
    data = state(ctx).settings.masked()

    def render() -> None:
        for key, value in data.items():
            if isinstance(value, dict):
                for sub, v in value.items():
                    print(f"{key}.{sub} = {v}")
            else:
                print(f"{key} = {value}")

    emit(data, wants_json(ctx, json_), render)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
