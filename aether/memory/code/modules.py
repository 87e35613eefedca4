"""Module names of files and of imports, so that an import and the file it means meet.

Python: ``billing/service.py`` is module ``billing.service`` (``src.`` dropped,
``__init__`` is its package); ``from .models import X`` there means ``billing.models``.
TypeScript/JavaScript: a file is its path without extension (``index`` is its folder);
``./models/user`` is resolved against the importing file. Other imports (packages, Go
import paths, Rust paths) are kept as written.
"""

from __future__ import annotations

import posixpath
from pathlib import PurePosixPath

_JS = ("typescript", "javascript")


def module_of(path: str, language: str) -> str | None:
    """The module a file provides (``None`` for languages imported by other means)."""
    p = PurePosixPath(path)
    if language == "python":
        parts = list(p.with_suffix("").parts)
        if parts and parts[0] == "src":
            parts = parts[1:]
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts) or None
    if language in _JS:
        stem = str(p.with_suffix(""))
        return stem[: -len("/index")] if stem.endswith("/index") else stem
    return None


def resolve_import(path: str, spec: str, language: str) -> str:
    """The module an import in ``path`` names, resolved when it is relative."""
    if language == "python" and spec.startswith("."):
        dots = len(spec) - len(spec.lstrip("."))
        package = (module_of(path, "python") or "").split(".")
        if PurePosixPath(path).stem != "__init__":
            package = package[:-1]
        base = package[: len(package) - (dots - 1)] if dots > 1 else package
        rest = spec.lstrip(".")
        return ".".join([*base, *([rest] if rest else [])])
    if language in _JS and spec.startswith("."):
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
        for ext in (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs"):
            if joined.endswith(ext):
                joined = joined[: -len(ext)]
        return joined[: -len("/index")] if joined.endswith("/index") else joined
    return spec
