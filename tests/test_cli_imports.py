"""The CLI imports what its command uses: ``--help`` loads no command, an admin command
loads neither the search engine nor the SDKs it never calls."""

from __future__ import annotations

import subprocess
import sys

from typer._click.utils import make_default_short_help

from aether.config import LogFormat
from aether.files import PRIVATE_UMASK
from aether.interfaces import cli
from tests.conftest import run_cli

# what no admin command needs: the search engine, vectors, the LLM and web SDKs
HEAVY = ("numpy", "redisvl", "openai", "torch", "sentence_transformers", "mcp", "starlette")


def _imported(env: dict[str, str], *args: str, codes: tuple[int, ...] = (0,)) -> set[str]:
    """The modules ``aether ARGS`` imported (read from ``-X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "aether", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in codes, done.stdout + done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    return {line.rsplit("|", 1)[1].strip() for line in lines}


def _loaded(modules: set[str], root: str) -> bool:
    return any(name == root or name.startswith(root + ".") for name in modules)


def test_the_command_table_says_what_each_command_says_of_itself() -> None:
    assert [entry.name for entry in cli.COMMANDS] == cli.AetherGroup().list_commands(None)
    for entry in cli.COMMANDS:
        command = cli.load_command(entry)
        assert command.name == entry.name
        assert make_default_short_help(command.help or "", max_length=10_000) == entry.help


def test_the_cli_spells_the_shared_constants_as_their_owners_do() -> None:
    assert cli.PRIVATE_UMASK == PRIVATE_UMASK
    assert cli.LogFormatName == LogFormat


def test_help_imports_no_command_and_no_client(cli_env: dict[str, str]) -> None:
    modules = _imported(cli_env, "--help")
    assert "aether.interfaces.cli" in modules
    for heavy in (*HEAVY, "redis", "aether.operations", "aether.config", "structlog"):
        assert not _loaded(modules, heavy), heavy
    assert not any(name.startswith("aether.interfaces.cli_") for name in modules)


def test_admin_commands_leave_the_search_engine_and_sdks_unloaded(
    cli_env: dict[str, str],
) -> None:
    created = run_cli(cli_env, "--json", "checkpoint", "create")
    assert created.returncode == 0, created.stderr
    for args in (("checkpoint", "create"), ("checkpoint", "list"), ("status",)):
        # status exits 1 when no daemon is up, as here
        modules = _imported(cli_env, *args, codes=(1,) if args == ("status",) else (0,))
        assert "aether.interfaces.cli" in modules
        for heavy in (*HEAVY, "aether.memory.retrieval", "aether.context"):
            assert not _loaded(modules, heavy), (args, heavy)


def test_no_framework_is_imported_unless_its_integration_is(cli_env: dict[str, str]) -> None:
    modules = _imported(cli_env, "memory", "search", "anything", codes=(0, 2))  # 2: none found
    assert _loaded(modules, "aether.memory.retrieval")
    for framework in ("langgraph", "langchain_core", "agents", "aether.integrations"):
        assert not _loaded(modules, framework), framework
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import aether.integrations"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "langgraph" not in done.stderr and " agents" not in done.stderr
