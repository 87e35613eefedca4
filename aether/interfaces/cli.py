"""The ``aether`` command line (typer).

Exit codes: 0 success, 1 error (one line on stderr, or ``{"error": ...}`` with --json),
2 no results.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Annotated

import typer

from aether.config import load_settings
from aether.errors import AetherError
from aether.interfaces import cli_checkpoint, cli_context, cli_identity, cli_memory, cli_redis
from aether.interfaces.common import AppState, emit, fail, run, state, wants_json
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


@app.command()
def up(ctx: typer.Context) -> None:
    """Run aether: ensure Redis, bootstrap identity on first boot, stay up until Ctrl-C."""
    st = state(ctx)

    async def body() -> None:
        import structlog

        from aether.memory.layer import MemoryLayer
        from aether.memory.search import MemorySearch
        from aether.runtime import embedding_service
        from aether.store.client import connect

        log = structlog.get_logger("aether.up")
        client = await connect(st.settings)
        identity = await cli_identity.identity_store(st, client, actor="daemon").ensure(
            cli_identity.identity_dir(st)
        )
        layer = MemoryLayer.open(st.settings, client, actor="daemon")
        await MemorySearch(layer).ensure_index()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        tasks = [asyncio.create_task(embedding_service.announce(client, layer.keys, stop))]
        if layer.embedder is not None:
            await layer.embedder.embed_many(["aether warm-up"])  # the model loads once, here
            tasks.append(asyncio.create_task(
                embedding_service.serve(client, layer.keys, layer.embedder, stop)))  # fmt: skip
        log.info(
            "aether is up",
            namespace=st.settings.namespace,
            agent=identity.agent.get("name"),
            redis="external" if st.settings.redis_url else "embedded",
            embeddings=layer.embedder.model_name if layer.embedder else "none",
        )
        try:
            await stop.wait()
            await asyncio.gather(*tasks)
        finally:
            await client.aclose()
            log.info("aether stopped")

    run(ctx, body)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
