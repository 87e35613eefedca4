"""The package's layers stay clean: a module imports only its own layer and those below.

Every import counts, also those inside functions (made lazy for start-up time) and
under ``TYPE_CHECKING``: a layer that needs something of a higher one takes it as an
argument typed by a protocol of its own layer (``aether.messages.TextModel``,
``aether.store.checkpointer.Checkpointer``, ``make_embedder(wrap_local=...)``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "aether"

# lowest first; a module may import from its own rank or a lower one
LAYERS: list[set[str]] = [
    {
        "errors",
        "ids",
        "files",
        "config",
        "keys",
        "logging",
        "messages",
        "codec",
        "tokens",
        "identifiers",
        "telemetry",
    },
    {"server"},
    {"store"},
    {"checkpoints", "registry"},
    # memory, bottom up: storage, then the tiers and code over it, then retrieval, then
    # what is learned; the package root (export and import) uses them all
    {"identity", "memory.storage"},
    {"memory.tiers", "memory.code"},
    {"memory.retrieval"},
    {"memory.knowledge"},
    {"memory"},
    # the scripted model extracts facts as aether's own deterministic extractor does
    {"testing"},
    {"context"},
    {"maintenance"},
    {"operations"},
    {"runtime"},
    {"app"},
    # faces over the parts: aether's own (CLI, MCP, console) and other runtimes' adapters
    {"interfaces", "integrations"},
    {"__main__", "__init__"},
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def _unit(module: str) -> str:
    """The layer unit a module belongs to: the longest of :data:`LAYERS` it is in.

    ``aether.memory.retrieval.search`` -> ``memory.retrieval``; ``aether.memory.erasure``
    -> ``memory``; ``aether.store.journal`` -> ``store``; ``aether`` -> ``__init__``.
    """
    parts = module.split(".")[1:]
    for size in range(len(parts), 0, -1):
        name = ".".join(parts[:size])
        if name in RANK:
            return name
    return parts[0] if parts else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "aether":
                found += [(node.lineno, f"aether.{a.name}") for a in node.names]
            elif node.module.startswith("aether."):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("aether")]
    return found


def _violations() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        unit = _unit(".".join(("aether", *rel.with_suffix("").parts)))
        assert unit in RANK, f"{rel}: place {unit!r} in a layer of tests/test_layers.py"
        for line, module in _imports(path):
            target = _unit(module)
            if target == "__version__":
                continue
            if target not in RANK:
                # ``from aether import X`` of a re-exported name: the root is the top
                target = "__init__"
            if RANK[target] > RANK[unit]:
                out.append(f"aether/{rel}:{line} ({unit}) imports {module} ({target})")
    return out


def test_every_import_goes_down_the_layers() -> None:
    assert _violations() == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from aether.runtime.agent import AgentRuntime\n")
    assert _imports(bad) == [(2, "aether.runtime.agent")]
    assert RANK[_unit("aether.runtime.agent")] > RANK["memory"]


def test_docstrings_point_to_the_repository_not_to_seed_documents() -> None:
    """The seed documents are not in the repository: a pointer to one leads nowhere."""
    import re

    pointers = [
        f"aether/{path.relative_to(PACKAGE)}"
        for path in PACKAGE.rglob("*.py")
        if re.search(r"\bseeds? 00\d", path.read_text())
    ]
    assert pointers == []
    design = (PACKAGE.parent / "docs" / "design.md").read_text()
    for path in PACKAGE.rglob("*.py"):
        for section in re.findall(r'docs/design\.md, "([^"]+)"', path.read_text()):
            assert f"## {section}\n" in design, (path, section)


def _module_graph(root: Path) -> dict[str, set[str]]:
    """Each module under ``root`` and the modules under it that it imports (every import)."""
    names = {
        ".".join(("aether", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(
            ".__init__"
        ): p
        for p in root.rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                submodules = {f"{node.module}.{a.name}" for a in node.names}
                targets |= (submodules & names.keys()) or {node.module}
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
        graph[name] = {t for t in targets if t in names and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle, as the path that closes it (depth-first, each found once)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                found.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_memory_has_no_import_circles() -> None:
    """No module of ``aether.memory`` reaches itself through its imports, even typing-only."""
    package_inits = {"aether.memory"}  # the package root re-exports: it sits above its parts
    graph = _module_graph(PACKAGE / "memory")
    for name in package_inits:
        graph[name] = set()
    assert _cycles(graph) == []


def test_the_circle_check_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]


def test_memory_modules_are_placed_in_their_sub_layers() -> None:
    """Memory's inner order is enforced: storage below tiers below retrieval below knowledge."""
    assert _unit("aether.memory.storage.layer") == "memory.storage"
    assert _unit("aether.memory.retrieval.search") == "memory.retrieval"
    assert _unit("aether.memory.knowledge.beliefs") == "memory.knowledge"
    assert _unit("aether.memory.erasure") == "memory"
    assert _unit("aether") == "__init__"
    assert RANK[_unit("aether.memory.knowledge.learner")] > RANK["memory.retrieval"]
    assert RANK[_unit("aether.memory.retrieval.candidates")] > RANK["memory.tiers"]


LAYOUT_PATH = re.compile(r"(?<![\w/.])((?:aether|compose|docs|identity|bench|tests)/[\w/.]*)")


def test_the_layout_names_what_exists_and_every_package() -> None:
    """docs/layout.md is true: each path it names exists, and it names every package."""
    root = PACKAGE.parent
    layout = (root / "docs" / "layout.md").read_text()
    named = {m.rstrip(".") for m in LAYOUT_PATH.findall(layout)}
    missing = sorted(path for path in named if not (root / path).exists())
    assert missing == [], f"docs/layout.md names what does not exist: {missing}"
    packages = {f"{p.parent.relative_to(root).as_posix()}/" for p in PACKAGE.rglob("__init__.py")}
    unnamed = sorted(packages - named)
    assert unnamed == [], f"docs/layout.md does not name these packages: {unnamed}"


def test_no_function_in_the_package_is_over_100_lines() -> None:
    """A function a reader cannot hold in mind is split.

    The console's 500-line closure became a Console object and page modules (issue 66).
    """
    long: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 100:
                    long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}")
    assert long == []


def test_the_benches_import_nothing_from_the_tests() -> None:
    """A bench runs from a checkout without the test suite's helpers (issue 66)."""
    bench = PACKAGE.parent / "bench"
    importing = sorted(
        path.name
        for path in bench.glob("*.py")
        if re.search(r"^\s*(from tests[ .]|import tests\b)", path.read_text(), re.MULTILINE)
    )
    assert importing == []


def test_a_search_reads_redis_only_through_its_candidate_reader() -> None:
    """Fusion, neighbours, newest-first and the hit are pure; the search orchestrates; every
    Redis read and write of a search is the candidate reader's (issue 66)."""
    retrieval = PACKAGE / "memory" / "retrieval"
    io = re.compile(r"\.client\b|\.mirror\b|Functions\(|get_docs\(|\.pipeline\(|fcall")
    for name in ("fusion", "neighbours", "newest", "hit", "search_filter", "search", "text"):
        source = (retrieval / f"{name}.py").read_text()
        assert not io.search(source), name
    assert io.search((retrieval / "candidates.py").read_text())


# the one name each wired object goes by (issue 66): an argument or annotated variable of
# this type is called this, whatever module it is in
ONE_NAME = {
    "MemoryLayer": "memory",
    "Parts": "parts",
    "Aether": "parts",
    "ContextAssembler": "assembler",
}


def _misnamed(source: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        pairs: list[tuple[str, ast.expr | None]] = []
        if isinstance(node, ast.arguments):
            args = [*node.posonlyargs, *node.args, *node.kwonlyargs]
            pairs = [(a.arg, a.annotation) for a in args]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            pairs = [(node.target.id, node.annotation)]
        for name, annotation in pairs:
            text = ast.unparse(annotation) if annotation is not None else ""
            for type_name, wanted in ONE_NAME.items():
                if re.fullmatch(rf"{type_name}( \| None)?", text) and name != wanted:
                    found.append(f"{name}: {text}")
    return found


def test_each_wired_object_has_one_name() -> None:
    """The namespace's parts are ``parts``, the memory layer ``memory``, the context
    assembler ``assembler``, everywhere in the package (issue 66)."""
    misnamed = [
        f"{path.relative_to(PACKAGE.parent)}: {what}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for what in _misnamed(path.read_text())
    ]
    assert misnamed == []


def test_the_name_check_sees_a_second_name() -> None:
    source = "def f(layer: MemoryLayer, app: Parts | None, parts: Parts) -> None: ..."
    assert _misnamed(source) == ["layer: MemoryLayer", "app: Parts | None"]
