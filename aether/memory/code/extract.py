"""One entry point: the facts of any supported source file."""

from __future__ import annotations

from aether.memory.code.model import CodeFacts, language_of
from aether.memory.code.python import extract_python
from aether.memory.code.regex import extractor_for


def extract(path: str, source: str) -> CodeFacts | None:
    """The facts of ``path`` (``None`` when its language is not supported)."""
    language = language_of(path)
    if language is None:
        return None
    if language == "python":
        return extract_python(path, source)
    extractor = extractor_for(language)
    return extractor(path, source) if extractor else None
