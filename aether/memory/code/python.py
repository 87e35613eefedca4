"""Python files through the standard ``ast`` module."""

from __future__ import annotations

import ast

from aether.memory.code.model import CodeFacts, Symbol, looks_like_test


def _called_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def extract_python(path: str, source: str) -> CodeFacts:
    """Functions, classes (methods with their class), imports and calls of a Python file."""
    facts = CodeFacts(path, "python", is_test=looks_like_test(path))
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError) as e:
        facts.error = f"{type(e).__name__}: {e}"
        return facts
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            facts.imports += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            if node.module is None:  # from . import a, b: each name is a module
                facts.imports += [base + alias.name for alias in node.names]
            else:
                facts.imports.append(base)

    def visit(body: list[ast.stmt], parent: str | None) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                facts.symbols.append(Symbol("class", node.name, node.lineno, parent))
                visit(node.body, node.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                facts.symbols.append(Symbol("function", node.name, node.lineno, parent))
                callees = {
                    name
                    for sub in ast.walk(node)
                    if isinstance(sub, ast.Call) and (name := _called_name(sub))
                }
                facts.calls += sorted((node.name, callee) for callee in callees)

    visit(tree.body, None)
    facts.imports = list(dict.fromkeys(facts.imports))
    return facts
