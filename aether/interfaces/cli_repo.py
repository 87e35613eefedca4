"""``aether repo ...`` (repository intelligence) and ``aether graph ...`` (entities)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from aether.interfaces.common import (
    JsonOpt,
    about,
    arguments,
    call,
    emit,
    group,
    wants_json,
)
from aether.interfaces.tables import Column, emit_table
from aether.memory.knowledge.graph import Entity
from aether.operations import NoArgs, ranges
from aether.operations import graph as graph_ops
from aether.operations import repo as repo_ops

repo_app = group("Repository intelligence: file map, imports, dependents.")
graph_app = group("The entity graph: find entities, expand around them.")
FileArg = Annotated[Path, typer.Argument(help="A file of an indexed repository.")]


@repo_app.command("index")
def repo_index(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="The repository's root.")] = Path("."),
    json_: JsonOpt = False,
) -> None:
    """Map a repository's source files; a re-index touches only changed files."""
    args = arguments(ctx, repo_ops.IndexArgs, path=path)
    report = call(ctx, repo_ops.repo_index, args, progress="indexing")
    emit(report, wants_json(ctx, json_), lambda: print(_summary(report)))


def _summary(report: repo_ops.Indexed) -> str:
    languages = ", ".join(f"{k} {v}" for k, v in sorted(report.languages.items()))
    summary = (
        f"{report.repo}: {report.files} files ({languages}); {len(report.changed)} "
        f"indexed, {report.unchanged} unchanged, {len(report.removed)} removed in "
        f"{report.seconds} s"
    )
    if report.skipped:
        reasons = ", ".join(f"{n} {r.replace('_', ' ')}" for r, n in sorted(report.skipped.items()))
        summary += f"; skipped {sum(report.skipped.values())} ({reasons})"
    return summary


@repo_app.command("list")
def repo_list(ctx: typer.Context, json_: JsonOpt = False) -> None:
    """Indexed repositories."""
    found = call(ctx, repo_ops.repo_list, NoArgs())
    columns: list[Column[dict[str, str]]] = [
        Column("repository", lambda r: r["id"], whole=True),
        Column("files", lambda r: r["files"], justify="right"),
        Column("root", lambda r: r["root"], whole=True),
    ]
    emit_table(found.repos, wants_json(ctx, json_), columns, empty="no indexed repositories")


# the columns each query adds after the path (related scores, deps depth, affected tests)
_QUERY_COLUMNS: dict[str, list[Column[Mapping[str, object]]]] = {
    "related": [Column("score", lambda r: f"{r['score']:.2f}", justify="right")],
    "deps": [Column("depth", lambda r: r["depth"], justify="right")],
    "affected": [
        Column("depth", lambda r: r["depth"], justify="right"),
        Column("test", lambda r: "test" if r.get("test") else ""),
    ],
}


def _query(ctx: typer.Context, file: Path, what: str, json_: bool) -> None:
    found = call(ctx, repo_ops.repo_query, arguments(ctx, repo_ops.FileArgs, file=file, what=what))
    columns = [Column[Mapping[str, object]]("path", lambda r: r["path"]), *_QUERY_COLUMNS[what]]
    empties = {"related": "no related files", "deps": "no dependencies", "affected": "nothing"}
    emit_table(found.rows, wants_json(ctx, json_), columns, empty=empties[what] + f" for {file}")


@repo_app.command("related")
def repo_related(ctx: typer.Context, file: FileArg, json_: JsonOpt = False) -> None:
    """Files most related to FILE (imports either way, shared imports, same folder)."""
    _query(ctx, file, "related", json_)


@repo_app.command("deps")
def repo_deps(ctx: typer.Context, file: FileArg, json_: JsonOpt = False) -> None:
    """What FILE depends on, transitively."""
    _query(ctx, file, "deps", json_)


@repo_app.command("affected")
def repo_affected(ctx: typer.Context, file: FileArg, json_: JsonOpt = False) -> None:
    """What a change to FILE can affect (its importers, transitively; tests marked)."""
    _query(ctx, file, "affected", json_)


@graph_app.command("find")
def graph_find(ctx: typer.Context, query: str, json_: JsonOpt = False) -> None:
    """Entities whose name or alias starts with a word of QUERY."""
    found = call(ctx, graph_ops.graph_find, arguments(ctx, graph_ops.FindArgs, query=query))
    columns: list[Column[Entity]] = [
        Column("id", lambda d: d["id"], whole=True),
        Column("type", lambda d: d["type"]),
        Column("name", lambda d: d["name"]),
        Column("mentions", lambda d: d.get("mention_count", 0), justify="right"),
        Column("salience", lambda d: f"{d.get('salience', 0):.2f}", justify="right"),
    ]
    empty = f"no entity matches {query!r}"
    emit_table(found.entities, wants_json(ctx, json_), columns, empty=empty)


@graph_app.command("alias")
def graph_alias(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help=about(graph_ops.AliasArgs, "name"))],
    alias: Annotated[str, typer.Argument(help=about(graph_ops.AliasArgs, "alias"))],
    type_: Annotated[
        str | None, typer.Option("--type", help=about(graph_ops.AliasArgs, "type"))
    ] = None,
    json_: JsonOpt = False,
) -> None:
    """Record that NAME is also known as ALIAS (search, forget --about and erase use it)."""
    args = arguments(ctx, graph_ops.AliasArgs, name=name, alias=alias, type=type_)
    found = call(ctx, graph_ops.graph_alias, args)
    entity = found.entities[0] if found.entities else None
    emit(
        found.model_dump(),
        wants_json(ctx, json_),
        lambda: print(
            f"{entity['type']} {entity['name']}: also {', '.join(entity.get('aliases', []))}"
            if entity
            else "recorded"
        ),
    )


@graph_app.command("expand")
def graph_expand(
    ctx: typer.Context,
    query: str,
    depth: Annotated[int, ranges.DEPTH.option("--depth", help="Hops.")] = 2,
    json_: JsonOpt = False,
) -> None:
    """The relations within DEPTH hops of the entities QUERY finds."""
    args = arguments(ctx, graph_ops.ExpandArgs, query=query, depth=depth)
    found = call(ctx, graph_ops.graph_expand, args)
    columns: list[Column[graph_ops.RelationRow]] = [
        Column("hop", lambda e: e["hop"], justify="right"),
        Column("source", lambda e: e["source"]),
        Column("relation", lambda e: e["type"]),
        Column("target", lambda e: e["target"]),
        Column("weight", lambda e: f"{e['weight']:g}", justify="right"),
    ]
    empty = f"no relations around {query!r}"
    emit_table(found.relations, wants_json(ctx, json_), columns, empty=empty)
