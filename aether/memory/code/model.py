"""What an extractor finds in one source file."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".go": "go",
    ".rs": "rust",
}


def language_of(path: str) -> str | None:
    """The language of a file by its extension (``None``: not one we read)."""
    return LANGUAGES.get(PurePosixPath(path).suffix.lower())


@dataclass(frozen=True)
class Symbol:
    """A function, method or class defined in a file."""

    kind: str  # function | class
    name: str
    line: int
    parent: str | None = None  # the class of a method


@dataclass
class CodeFacts:
    """Everything extracted from one file."""

    path: str
    language: str
    symbols: list[Symbol] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)  # module specifiers, as written
    calls: list[tuple[str, str]] = field(default_factory=list)  # (caller, callee) names
    is_test: bool = False
    error: str | None = None  # a file that does not parse still yields what it can

    @property
    def functions(self) -> list[str]:
        """Names of the functions and methods."""
        return [s.name for s in self.symbols if s.kind == "function"]

    @property
    def classes(self) -> list[str]:
        """Names of the classes (and structs, traits, interfaces)."""
        return [s.name for s in self.symbols if s.kind == "class"]


def looks_like_test(path: str) -> bool:
    """Test files by the usual conventions of each language."""
    p = PurePosixPath(path)
    name = p.name.lower()
    return (
        name.startswith("test_")
        or name.endswith(
            (
                "_test.py",
                "_test.go",
                ".test.ts",
                ".test.js",
                ".spec.ts",
                ".spec.js",
                ".test.tsx",
                ".spec.tsx",
            )
        )
        or "tests" in p.parts[:-1]
        or "__tests__" in p.parts
    )
