"""``aether redis start|stop|status|cli|url``: the embedded Redis server."""

from __future__ import annotations

import asyncio
import shlex
import subprocess
import sys
from typing import Annotated, Any

import typer
from redis.exceptions import ResponseError

from aether.codec import command
from aether.errors import AetherError
from aether.interfaces.common import (
    JsonOpt,
    emit,
    fail,
    group,
    redis_client,
    run,
    state,
    wants_json,
)
from aether.server.embedded import EmbeddedRedis, Endpoint

app = group("The Redis server (embedded, or AETHER_REDIS_URL).")


def _embedded(ctx: typer.Context) -> EmbeddedRedis:
    settings = state(ctx).settings
    if settings.redis_url is not None:
        fail(
            "AETHER_REDIS_URL is set: the embedded server is not used",
            state(ctx).json,
            kind="config",
        )
    return EmbeddedRedis(settings)


@app.command()
def start(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Start the embedded server (idempotent) and verify its modules."""
    server = _embedded(ctx)

    async def body() -> None:
        async with redis_client(state(ctx).settings):
            pass

    run(ctx, body)
    status = server.status()
    emit(
        {"running": True, "pid": status.pid, "socket": str(status.endpoint.unix_socket)},
        wants_json(ctx, json_),
        lambda: print(f"redis running (pid {status.pid}) at {status.endpoint.unix_socket}"),
    )


@app.command()
def stop(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Stop the embedded server cleanly."""
    server = _embedded(ctx)
    try:
        was_running = server.stop()
    except AetherError as e:
        fail(str(e), wants_json(ctx, json_))
    emit(
        {"stopped": was_running},
        wants_json(ctx, json_),
        lambda: print("redis stopped" if was_running else "redis was not running"),
    )


@app.command()
def status(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Whether the embedded server runs; exit 1 when it does not."""
    server = _embedded(ctx)
    st = server.status()
    chain = server.chain_runs_in() if st.running else None
    emit(
        {
            "running": st.running,
            "pid": st.pid,
            "socket": str(st.endpoint.unix_socket),
            "port": st.endpoint.port,
            "data_dir": str(st.data_dir),
            "journal_chain": chain,
        },
        wants_json(ctx, json_),
        lambda: print(
            f"redis {'running (pid ' + str(st.pid) + ')' if st.running else 'not running'}"
            f" · socket {st.endpoint.unix_socket} · data {st.data_dir}"
            + (
                f" · journal chain in {'the C module' if chain == 'module' else 'Lua'}"
                if chain
                else ""
            )
        ),
    )
    if not st.running:
        raise typer.Exit(1)


def _cli_argv(ctx: typer.Context, endpoint: Endpoint | None) -> list[str]:
    settings = state(ctx).settings
    if endpoint is None:
        assert settings.redis_url is not None
        return ["-u", settings.redis_url.get_secret_value()]
    return ["-s", str(endpoint.unix_socket), "-a", endpoint.password, "--no-auth-warning"]


@app.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
def cli(
    ctx: typer.Context,
    args: Annotated[list[str] | None, typer.Argument(help="Command and arguments.")] = None,
    builtin: Annotated[
        bool, typer.Option("--builtin", help="Send through redis-py even if redis-cli exists.")
    ] = False,
) -> None:
    """Run redis-cli against the server, e.g. 'aether redis cli HGETALL aether:identity:profile'."""
    settings = state(ctx).settings
    endpoint: Endpoint | None = None
    if settings.redis_url is None:
        server = EmbeddedRedis(settings)
        try:
            endpoint = server.start().endpoint
        except AetherError as e:
            fail(str(e))
    from aether.server.binaries import find_binaries

    binary = None if builtin else find_binaries().cli
    words = list(args or [])
    if binary is not None:
        proc = subprocess.run([str(binary), *_cli_argv(ctx, endpoint), *words], check=False)
        raise typer.Exit(proc.returncode)
    if not words:
        fail("interactive mode needs redis-cli; pass a command, e.g. 'aether redis cli PING'")
    from aether.server.cli_format import format_reply

    async def body() -> Any:
        async with redis_client(settings) as client:
            return await command(client, *words)

    try:
        reply = asyncio.run(body())
    except ResponseError as e:  # as redis-cli: print the server's error, exit 1
        print(f"(error) {e}")
        raise typer.Exit(1) from e
    except AetherError as e:
        fail(str(e))
    print(format_reply(reply, sys.stdout.isatty()))


@app.command()
def url(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Print what a person needs to point redis-cli or RedisInsight at the server."""
    settings = state(ctx).settings
    as_json = wants_json(ctx, json_)
    if settings.redis_url is not None:
        value = settings.redis_url.get_secret_value()
        emit(
            {"url": value, "redis_cli": f"redis-cli -u {shlex.quote(value)}"},
            as_json,
            lambda: print(f"url:       {value}\nredis-cli: redis-cli -u {shlex.quote(value)}"),
        )
        return
    ep = EmbeddedRedis(settings).endpoint()
    data = {
        "socket": str(ep.unix_socket),
        "password": ep.password,
        "url": f"unix://:{ep.password}@{ep.unix_socket}",
        "tcp_url": f"redis://:{ep.password}@127.0.0.1:{ep.port}" if ep.port else None,
        "redis_cli": (
            f"redis-cli -s {shlex.quote(str(ep.unix_socket))} -a {ep.password} --no-auth-warning"
        ),
        "password_file": str(EmbeddedRedis(settings).password_path),
    }

    def render() -> None:
        print(f"socket:    {data['socket']}")
        print(f"password:  {data['password']}  (from {data['password_file']})")
        print(f"url:       {data['url']}")
        if data["tcp_url"]:
            print(f"tcp url:   {data['tcp_url']}  (RedisInsight)")
        else:
            print("tcp:       off; set AETHER_REDIS_PORT to listen on 127.0.0.1 for RedisInsight")
        print(f"redis-cli: {data['redis_cli']}")

    emit(data, as_json, render)


__all__ = ["app"]
