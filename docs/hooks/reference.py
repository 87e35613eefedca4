"""mkdocs hook: the reference pages, generated from the code at every build.

Configuration from the ``Settings`` fields, the CLI from its typer app, the MCP tools
from the operations registry, the keyspace from ``aether.keys.Keyspace``: nothing is
copied by hand, so ``mkdocs build --strict`` fails when a page would drift.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import typer
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from aether.errors import AetherError

PAGES = {
    "reference/configuration.md": "configuration",
    "reference/cli.md": "cli",
    "reference/mcp.md": "mcp",
    "reference/keyspace.md": "keyspace",
}


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(field: FieldInfo) -> str:
    if field.default_factory is not None:
        try:
            value: Any = field.default_factory()  # type: ignore[call-arg]
        except TypeError:
            return "(computed)"
    elif field.default is PydanticUndefined:
        return "(required)"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(group)"
    if "secret" in type(value).__name__.lower():
        return "(secret)"
    return f"`{value!r}`" if value is not None else "unset"


def _settings_rows(model: type[BaseModel], prefix: str) -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        env = f"{prefix}{name.upper()}"
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows += _settings_rows(annotation, f"{env}__")
            continue
        kind = re.sub(r"\b(typing|pydantic|pathlib|datetime)\.", "", str(annotation))
        kind = kind.replace("<class '", "").replace("'>", "")
        rows.append(
            f"| `{env}` | {_cell(kind)} | {_cell(_default(field))} | "
            f"{_cell(field.description or '')} |"
        )
    return rows


def configuration() -> str:
    """Every setting: its variable, type, default and meaning."""
    from aether.config import Settings

    head = [
        "# Configuration reference",
        "",
        "Generated from `aether/config.py` at build time. One pydantic-settings tree: prefix",
        "`AETHER_`, nested groups joined with `__`, optionally read from `config/aether.toml`",
        "(`AETHER_CONFIG_FILE` names another). `aether config show [--json]` prints the",
        "effective values, secrets masked.",
        "",
        "| variable | type | default | meaning |",
        "|---|---|---|---|",
    ]
    return "\n".join(head + _settings_rows(Settings, "AETHER_")) + "\n"


def _commands(group: Any, path: str) -> list[tuple[str, Any]]:
    """(``aether memory log``, the command) for every command under ``group``, sorted.

    Typer carries its own copy of click, so commands are read by what they have; the
    root group loads each command's module when asked for it.
    """
    out: list[tuple[str, Any]] = []
    for name in group.list_commands(None):
        command = group.get_command(None, name)
        if getattr(command, "hidden", False):
            continue
        full = f"{path} {name}"
        if command is None:
            continue
        if hasattr(command, "list_commands"):
            out += _commands(command, full)
        else:
            out.append((full, command))
    return out


def cli() -> str:
    """Every command with its help and options, as typer builds them."""
    from aether.interfaces.cli import app

    root = typer.main.get_command(app)
    lines = [
        "# CLI reference",
        "",
        "Generated from the typer app (`aether/interfaces/cli.py`) at build time; "
        "`aether COMMAND --help` prints the same.",
        "",
    ]
    for path, command in _commands(root, "aether"):
        lines += [f"## `{path}`", "", inspect.cleandoc(command.help or "").split("\n\n")[0], ""]
        params = [p for p in command.params if p.name != "help"]
        if params:
            lines += ["| argument | meaning |", "|---|---|"]
            for param in params:
                names = ", ".join(f"`{o}`" for o in param.opts) if param.opts else param.name
                if param.param_type_name == "argument":
                    names = f"`{(param.name or '').upper()}`"
                meaning = getattr(param, "help", None) or ""
                lines.append(f"| {names} | {_cell(meaning)} |")
            lines.append("")
    return "\n".join(lines) + "\n"


def mcp() -> str:
    """Every MCP tool: the operations registry, with each tool's arguments."""
    from aether.operations import registry

    lines = [
        "# MCP tools reference",
        "",
        "Generated from the operations registry (`aether/operations/`) at build time. Each",
        "operation is an MCP tool of `aether mcp` (stdio) and of the daemon's HTTP endpoint",
        "(but those marked *CLI only*, which touch the host's files), and a CLI command;",
        "those marked *agent* are also the agent's own tools.",
        "",
    ]
    for name, op in registry().items():
        flags = (
            ("read-only", op.read_only),
            ("agent", op.agent),
            ("CLI only: not served over MCP", not op.mcp),
        )
        marks = ", ".join(m for m, on in flags if on)
        lines += [f"## `{name}`", ""]
        if marks:
            lines += [f"*{marks}*", ""]
        lines += [inspect.cleandoc(op.description), ""]
        fields = op.arguments.model_fields
        if fields:
            lines += ["| argument | type | meaning |", "|---|---|---|"]
            for arg, field in fields.items():
                kind = re.sub(r"\b(typing|pydantic)\.", "", str(field.annotation))
                kind = kind.replace("<class '", "").replace("'>", "")
                lines.append(f"| `{arg}` | {_cell(kind)} | {_cell(field.description or '')} |")
            lines.append("")
    return "\n".join(lines) + "\n"


def keyspace() -> str:
    """Every key the namespace holds, from ``Keyspace``'s methods and their docs."""
    from aether.keys import Keyspace

    keys = Keyspace("aether")
    lines = [
        "# Keyspace reference",
        "",
        "Generated from `aether/keys.py` at build time, for the namespace `aether`. Every",
        "key of a namespace starts with its name; a placeholder in braces is a value.",
        "",
        "| key | method | what it holds |",
        "|---|---|---|",
    ]
    for name, method in inspect.getmembers(Keyspace, inspect.isfunction):
        if name.startswith("_"):
            continue
        params = list(inspect.signature(method).parameters)[1:]
        try:
            key = getattr(keys, name)(*(f"{{{p}}}" for p in params))
        except (AetherError, ValueError, TypeError, AttributeError):  # not a plain string
            key = f"{name}({', '.join(params)})"
        if not isinstance(key, str):
            continue
        doc = inspect.getdoc(method) or ""
        lines.append(f"| `{_cell(key)}` | `{name}` | {_cell(doc.split(chr(10) + chr(10))[0])} |")
    return "\n".join(lines) + "\n"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated reference pages to the site."""
    for path, builder in PAGES.items():
        files.append(File.generated(config, path, content=globals()[builder]()))
    return files
