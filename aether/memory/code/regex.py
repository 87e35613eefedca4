"""TypeScript/JavaScript, Go and Rust files through careful regexes (no parser, no network).

Comments are removed and string contents blanked before symbols and calls are looked
for, so a ``function`` inside a comment or a string is not a definition; imports are read
before the strings are blanked. Calls are the names called between one definition and
the next.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from aether.memory.code.model import CodeFacts, Symbol, looks_like_test

_COMMENT_OR_STRING = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)""",
    re.DOTALL,
)
_KEYWORDS = frozenset(
    [
        "if",
        "for",
        "while",
        "switch",
        "catch",
        "return",
        "function",
        "new",
        "typeof",
        "await",
        "async",
        "else",
        "do",
        "try",
        "with",
        "match",
        "loop",
        "fn",
        "func",
        "go",
        "defer",
        "select",
        "case",
        "import",
        "export",
        "from",
        "class",
        "struct",
        "impl",
        "use",
        "mod",
        "let",
        "const",
        "var",
        "pub",
        "type",
        "interface",
        "enum",
        "trait",
        "where",
        "super",
        "self",
        "this",
        "yield",
        "sizeof",
    ]
)
_CALL = re.compile(r"(?<![\w$])([A-Za-z_$][\w$]*)\s*(?:::<[^>]*>)?\s*\(")


def _strip_comments(source: str) -> str:
    """The source without comments (strings kept)."""

    def keep(m: re.Match[str]) -> str:
        text = m.group(0)
        return "\n" * text.count("\n") if m.group("comment") else text

    return _COMMENT_OR_STRING.sub(keep, source)


def _blank_strings(source: str) -> str:
    """The (comment-free) source with every string's content blanked (lines kept)."""

    def blank(m: re.Match[str]) -> str:
        text = m.group(0)
        if m.group("comment"):
            return "\n" * text.count("\n")
        return text[0] + "".join("\n" if c == "\n" else " " for c in text[1:-1]) + text[-1]

    return _COMMENT_OR_STRING.sub(blank, source)


def _line_of(source: str, pos: int) -> int:
    return source.count("\n", 0, pos) + 1


def _calls(code: str, symbols: list[tuple[int, Symbol]]) -> list[tuple[str, str]]:
    """(caller, callee) for each function, from its definition to the next one."""
    out: set[tuple[str, str]] = set()
    starts = sorted(symbols, key=lambda s: s[0])
    for i, (pos, symbol) in enumerate(starts):
        if symbol.kind != "function":
            continue
        end = starts[i + 1][0] if i + 1 < len(starts) else len(code)
        body = code[pos:end]
        head = body.find("(")
        for m in _CALL.finditer(body, head + 1 if head >= 0 else 0):
            name = m.group(1)
            if name not in _KEYWORDS and name != symbol.name:
                out.add((symbol.name, name))
    return sorted(out)


# --------------------------------------------------------------------- TS / JS

_TS_IMPORT = re.compile(
    r"""(?:^|[;\n])\s*(?:import|export)\s+(?:type\s+)?(?:[\w*${}\s,]+?\s+from\s+)?["']([^"'\n]+)["']"""
    r"""|\brequire\(\s*["']([^"'\n]+)["']\s*\)|\bimport\(\s*["']([^"'\n]+)["']\s*\)""",
)
_TS_FUNCTION = re.compile(
    r"\b(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\s*\("
    r"|\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:async\s+)?"
    r"(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)"
)
_TS_CLASS = re.compile(r"\b(?:abstract\s+)?(class|interface)\s+([A-Za-z_$][\w$]*)")
_TS_METHOD = re.compile(
    r"^[ \t]+(?:(?:public|private|protected|static|async|readonly|override|get|set)\s+)*"
    r"([A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\s*\([^)]*\)\s*(?::\s*[^{;]+)?\{",
    re.MULTILINE,
)


def extract_typescript(path: str, source: str, language: str = "typescript") -> CodeFacts:
    """Imports, functions (incl. arrow functions and methods), classes and interfaces."""
    facts = CodeFacts(path, language, is_test=looks_like_test(path))
    no_comments = _strip_comments(source)
    for m in _TS_IMPORT.finditer(no_comments):
        facts.imports.append(next(g for g in m.groups() if g))
    code = _blank_strings(source)
    found: list[tuple[int, Symbol]] = []
    classes: list[tuple[int, int, str]] = []
    for m in _TS_CLASS.finditer(code):
        found.append((m.start(), Symbol("class", m.group(2), _line_of(code, m.start()))))
        classes.append((m.start(), _block_end(code, m.end()), m.group(2)))
    for m in _TS_FUNCTION.finditer(code):
        name = m.group(1) or m.group(2)
        found.append((m.start(), Symbol("function", name, _line_of(code, m.start()))))
    for m in _TS_METHOD.finditer(code):
        owner = next((c for s, e, c in classes if s < m.start() < e), None)
        if owner and m.group(1) not in _KEYWORDS:
            found.append(
                (m.start(1), Symbol("function", m.group(1), _line_of(code, m.start(1)), owner))
            )
    found.sort(key=lambda item: item[0])
    facts.symbols = [s for _, s in found]
    facts.imports = list(dict.fromkeys(facts.imports))
    facts.calls = _calls(code, found)
    return facts


def _block_end(code: str, start: int) -> int:
    """The position after the ``{...}`` block that opens at or after ``start``."""
    open_at = code.find("{", start)
    if open_at < 0:
        return start
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(code)


# --------------------------------------------------------------------- Go

_GO_IMPORT_ONE = re.compile(r'^\s*import\s+(?:[\w.]+\s+)?"([^"]+)"', re.MULTILINE)
_GO_IMPORT_BLOCK = re.compile(r"^\s*import\s*\((.*?)\)", re.MULTILINE | re.DOTALL)
_GO_IMPORT_LINE = re.compile(r'^\s*(?:[\w.]+\s+)?"([^"]+)"', re.MULTILINE)
_GO_FUNC = re.compile(
    r"^func\s+(?:\(\s*\w*\s*\*?\s*([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*\)\s*)?([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\(",
    re.MULTILINE,
)
_GO_TYPE = re.compile(
    r"^type\s+([A-Za-z_]\w*)(?:\[[^\]]*\])?\s+(?:struct|interface)\b", re.MULTILINE
)


def extract_go(path: str, source: str) -> CodeFacts:
    """Imports, functions, methods (with their receiver type), structs and interfaces."""
    facts = CodeFacts(path, "go", is_test=looks_like_test(path))
    no_comments = _strip_comments(source)
    facts.imports += _GO_IMPORT_ONE.findall(no_comments)
    for block in _GO_IMPORT_BLOCK.findall(no_comments):
        facts.imports += _GO_IMPORT_LINE.findall(block)
    code = _blank_strings(source)
    found: list[tuple[int, Symbol]] = []
    for m in _GO_TYPE.finditer(code):
        found.append((m.start(), Symbol("class", m.group(1), _line_of(code, m.start()))))
    for m in _GO_FUNC.finditer(code):
        found.append(
            (m.start(), Symbol("function", m.group(2), _line_of(code, m.start()), m.group(1)))
        )
    found.sort(key=lambda item: item[0])
    facts.symbols = [s for _, s in found]
    facts.imports = list(dict.fromkeys(facts.imports))
    facts.calls = _calls(code, found)
    return facts


# --------------------------------------------------------------------- Rust

_RS_USE = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;{]+?)(?:::\{[^;]*\})?\s*;", re.MULTILINE
)
_RS_MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_]\w*)\s*;", re.MULTILINE)
_RS_CRATE = re.compile(r"^\s*extern\s+crate\s+([A-Za-z_]\w*)", re.MULTILINE)
_RS_FN = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe|extern(?:\s+\"[^\"]*\")?)\s+)*"
    r"fn\s+([A-Za-z_]\w*)",
    re.MULTILINE,
)
_RS_TYPE = re.compile(
    r"^\s*(?:pub(?:\([^)]*\))?\s+)?(struct|enum|trait|union)\s+([A-Za-z_]\w*)", re.MULTILINE
)
_RS_IMPL = re.compile(
    r"^\s*impl(?:\s*<[^>{]*>)?\s+(?:[\w:<>, ]+?\s+for\s+)?([A-Za-z_]\w*)", re.MULTILINE
)


def extract_rust(path: str, source: str) -> CodeFacts:
    """``use``/``mod``/``extern crate``, functions (methods with their impl type), types."""
    facts = CodeFacts(path, "rust", is_test=looks_like_test(path) or "#[cfg(test)]" in source)
    no_comments = _strip_comments(source)
    facts.imports += [u.strip().split(" as ")[0].strip() for u in _RS_USE.findall(no_comments)]
    facts.imports += _RS_MOD.findall(no_comments) + _RS_CRATE.findall(no_comments)
    code = _blank_strings(source)
    impls = [(m.start(), _block_end(code, m.end()), m.group(1)) for m in _RS_IMPL.finditer(code)]
    found: list[tuple[int, Symbol]] = []
    for m in _RS_TYPE.finditer(code):
        found.append((m.start(2), Symbol("class", m.group(2), _line_of(code, m.start(2)))))
    for m in _RS_FN.finditer(code):
        owner = next((t for s, e, t in impls if s < m.start(1) < e), None)
        found.append(
            (m.start(1), Symbol("function", m.group(1), _line_of(code, m.start(1)), owner))
        )
    found.sort(key=lambda item: item[0])
    facts.symbols = [s for _, s in found]
    facts.imports = list(dict.fromkeys(facts.imports))
    facts.calls = _calls(code, found)
    return facts


def extractor_for(language: str) -> Callable[[str, str], CodeFacts] | None:
    """The regex extractor of a language (``None`` for Python and unknown ones)."""
    return {
        "typescript": extract_typescript,
        "javascript": lambda p, s: extract_typescript(p, s, "javascript"),
        "go": extract_go,
        "rust": extract_rust,
    }.get(language)
