"""``aether repo ...`` (repository intelligence) and ``aether graph ...`` (entities)."""

from __future__ import annotations

from collections.abc import Mapping

from aether.interfaces.commands import Out, command
from aether.interfaces.common import group
from aether.interfaces.tables import Column
from aether.memory.knowledge.graph import Entity
from aether.operations import graph as graph_ops
from aether.operations import repo as repo_ops

QUERY = {"query": "query"}
repo_app = group(
    "Repository intelligence: file map, imports, dependents.",
    order=("index", "list", "related", "deps", "affected"),
)
graph_app = group("The entity graph: find entities, expand around them.")


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


# the columns each query adds after the path (related scores, deps depth, affected tests)
_QUERY_COLUMNS: dict[str, list[Column[Mapping[str, object]]]] = {
    "related": [Column("score", lambda r: f"{r['score']:.2f}", justify="right")],
    "deps": [Column("depth", lambda r: r["depth"], justify="right")],
    "affected": [
        Column("depth", lambda r: r["depth"], justify="right"),
        Column("test", lambda r: "test" if r.get("test") else ""),
    ],
}


@command(repo_app, "list", repo_ops.repo_list)
def _repos(found: repo_ops.Repos, out: Out[repo_ops.Repos]) -> None:
    """Indexed repositories."""
    columns: list[Column[dict[str, str]]] = [
        Column("repository", lambda r: r["id"], whole=True),
        Column("files", lambda r: r["files"], justify="right"),
        Column("root", lambda r: r["root"], whole=True),
    ]
    out.table(found.repos, columns, empty="no indexed repositories")


_EMPTIES = {"related": "no related files", "deps": "no dependencies", "affected": "nothing"}


def _rows(found: repo_ops.FileRows, out: Out[repo_ops.FileRows]) -> None:
    what, file = out.args.what, out.args.file
    columns = [Column[Mapping[str, object]]("path", lambda r: r["path"]), *_QUERY_COLUMNS[what]]
    out.table(found.rows, columns, empty=f"{_EMPTIES[what]} for {file}")


@command(graph_app, "find", graph_ops.graph_find, positional=QUERY)
def _entities(found: graph_ops.Entities, out: Out[graph_ops.Entities]) -> None:
    """Entities whose name or alias starts with a word of QUERY."""
    columns: list[Column[Entity]] = [
        Column("id", lambda d: d["id"], whole=True),
        Column("type", lambda d: d["type"]),
        Column("name", lambda d: d["name"]),
        Column("mentions", lambda d: d.get("mention_count", 0), justify="right"),
        Column("salience", lambda d: f"{d.get('salience', 0):.2f}", justify="right"),
    ]
    out.table(found.entities, columns, empty=f"no entity matches {out.args.query!r}")


@command(graph_app, "alias", graph_ops.graph_alias, positional={"name": "name", "alias": "alias"})
def _aliased(found: graph_ops.Entities, out: Out[graph_ops.Entities]) -> None:
    """Record that NAME is also known as ALIAS (search, forget --about and erase use it)."""
    if not found.entities:
        out.emit(found, "recorded")
        return
    entity = found.entities[0]
    out.emit(
        found, f"{entity['type']} {entity['name']}: also {', '.join(entity.get('aliases', []))}"
    )


@command(graph_app, "expand", graph_ops.graph_expand, positional=QUERY)
def _relations(found: graph_ops.Related, out: Out[graph_ops.Related]) -> None:
    """The relations within DEPTH hops of the entities QUERY finds."""
    columns: list[Column[graph_ops.RelationRow]] = [
        Column("hop", lambda e: e["hop"], justify="right"),
        Column("source", lambda e: e["source"]),
        Column("relation", lambda e: e["type"]),
        Column("target", lambda e: e["target"]),
        Column("weight", lambda e: f"{e['weight']:g}", justify="right"),
    ]
    out.table(found.relations, columns, empty=f"no relations around {out.args.query!r}")


@command(repo_app, "index", repo_ops.repo_index, positional={"path": "path"}, progress="indexing")
def _indexed(report: repo_ops.Indexed, out: Out[repo_ops.Indexed]) -> None:
    """Map a repository's source files; a re-index touches only changed files."""
    out.emit(report, _summary(report))


for _what, _help in (
    ("related", "Files most related to FILE (imports either way, shared imports, same folder)."),
    ("deps", "What FILE depends on, transitively."),
    ("affected", "What a change to FILE can affect (its importers, transitively; tests marked)."),
):
    command(
        repo_app,
        _what,
        repo_ops.repo_query,
        positional={"file": "file"},
        fixed={"what": _what},
        help=_help,
    )(_rows)
