"""One settings tree for every entry point (pydantic-settings, env prefix ``AETHER_``).

Sources, strongest first: constructor arguments, environment variables (``AETHER_HOME``,
``AETHER_REDIS_URL``, nested groups with ``__`` such as ``AETHER_CHECKPOINTS__KEEP``),
then the TOML file named by ``AETHER_CONFIG_FILE`` (default ``config/aether.toml``
relative to the working directory) when it exists, then defaults.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

DEFAULT_CONFIG_FILE = Path("config/aether.toml")


def _default_home() -> Path:
    return Path.home() / ".local" / "share" / "aether"


class CheckpointSettings(BaseModel):
    """Checkpoint retention."""

    keep: int = Field(default=50, ge=1, description="checkpoints kept; older ones are pruned")
    budget_ms: int = Field(
        default=100,
        ge=5,
        le=10_000,
        description="the longest one Redis Function call works: rollback and snapshot go in steps",
    )


class OtelSettings(BaseModel):
    """OpenTelemetry spans of memory operations (the ``otel`` extra)."""

    enabled: bool = Field(
        default=False,
        description="emit a span per memory operation and MCP tool call, exported over OTLP "
        "(OTEL_EXPORTER_OTLP_ENDPOINT...); off: no cost",
    )
    capture_content: bool = Field(
        default=False,
        description="put search queries and memory records on the spans (they may hold "
        "personal data)",
    )
    service_name: str = Field(default="aether", description="the spans' service.name")


class JournalSettings(BaseModel):
    """The journal's tamper evidence."""

    key: Path | None = Field(
        default=None,
        description="a file (mode 0600) holding the key that signs the journal's hash chain "
        "(HMAC-SHA256); unset: the chain is hashed, not signed",
    )


class ArchiveSettings(BaseModel):
    """PostgreSQL archive behaviour."""

    snapshot_every: int = Field(
        default=10_000, ge=1, description="journal entries between two base snapshots"
    )
    batch_size: int = Field(default=1_000, ge=1, description="journal entries per sync batch")


class MemorySettings(BaseModel):
    """Memory tiers and search."""

    max_content_bytes: int = Field(default=1024 * 1024, ge=1, description="per entry")
    daily_retention_days: int = Field(default=7, ge=1)
    episode_cap: int = Field(default=50, ge=1)
    episode_output_chars: int = Field(default=2000, ge=1)
    scratchpad_ttl_s: int = Field(default=3600, ge=1)
    tools_ttl_s: int = Field(default=86_400, ge=1)
    recency_half_life_days: float = Field(default=30.0, gt=0)
    recency_weight: float = Field(default=0.1, ge=0, le=1)
    candidates_per_result: int = Field(
        default=4, ge=1, le=50, description="hybrid search: candidates per signal per result"
    )
    fusion: Literal["adaptive", "minmax", "rrf"] = Field(
        default="adaptive",
        description="hybrid search: how the full-text and vector lists are fused (min-max "
        "scaled and weighted per query by how clearly each list's best stand out, min-max "
        "scaled with a fixed alpha, or reciprocal ranks; see aether/memory/retrieval/search.py)",
    )
    ranker: Literal["fusion", "learned"] = Field(
        default="learned",
        description="hybrid search: order the fused candidates by the learned ranker "
        "(LightGBM over fusion's features, aether[local]; without its model or LightGBM, or "
        "with an embedder other than the local model it was trained on, fusion's order) or "
        "by fusion's score; see aether/memory/retrieval/ranker.py",
    )
    knn_filtered_policy: Literal["adaptive", "auto", "batches", "adhoc_bf"] = Field(
        default="adaptive",
        description="hybrid search: how a filtered vector search applies its filter "
        "(RediSearch's HYBRID_POLICY: brute force while the filter passes at most about "
        "sqrt(500 x memories) readings, HNSW in batches above, the answer kept five minutes; "
        "RediSearch's own choice; always batches; always brute force); bench/memory.py "
        "measures each; see aether/memory/retrieval/filter_size.py",
    )
    scoped_indexes: int = Field(
        default=8,
        ge=0,
        le=64,
        description="hybrid search: how many large tags get a vector index of their own "
        "(tags more memories carry than brute force reaches, the largest first; made and "
        "dropped by maintenance; 0: none); a search filtered by one such tag walks its "
        "small graph; see aether/memory/storage/scoped_indexes.py",
    )
    knn_ef_runtime: int | None = Field(
        default=None,
        ge=1,
        le=4096,
        description="hybrid search: HNSW's EF_RUNTIME (candidates the graph walk keeps; "
        "unset: RediSearch's default, at least the number asked for)",
    )
    vector_alpha: float = Field(
        default=0.35,
        ge=0,
        le=1,
        description="hybrid search: weight of vector vs full text (minmax and rrf; adaptive "
        "falls back to it when a list is too small to weigh)",
    )
    min_similarity: float = Field(
        default=0.3,
        ge=-1,
        le=1,
        description="hybrid search: a result without a full-text match needs this cosine "
        "similarity (calibrated on LoCoMo by bench/locomo.py; -1 turns the floor off)",
    )
    min_coverage: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="hybrid search: a full-text match below min_similarity must contain this "
        "share of the query's meaningful words",
    )
    rerank: Literal["off", "cross-encoder", "llm"] = Field(
        default="off",
        description="hybrid search: rerank the best results with the packaged ms-marco "
        "cross-encoder (aether[local]) or the configured LLM (AETHER_LLM__*); see "
        "aether/memory/retrieval/rerank.py",
    )
    rerank_depth: int = Field(
        default=30, ge=1, le=200, description="hybrid search: how many results it reranks"
    )
    rerank_floor: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="hybrid search, reranked: judged results less likely relevant than this "
        "are left out; when every judged result is, search finds nothing (0 = keep all)",
    )
    vector_datatype: Literal["float32", "float16"] = Field(
        default="float16",
        description="how vectors are stored: float16 takes half the bytes of float32 at the "
        "same recall (docs/decisions/0002-float16-vectors.md); a change re-encodes the "
        "namespace's vectors at the daemon's next start",
    )


class ModelWindow(BaseModel):
    """One model's context window and how it is shared (fractions of the window)."""

    window_tokens: int = Field(default=32_768, ge=512, description="the model's context window")
    system_share: float = Field(default=0.10, gt=0, lt=1, description="system prompt")
    tools_share: float = Field(default=0.15, ge=0, lt=1, description="tool schemas")
    history_share: float = Field(default=0.60, gt=0, lt=1, description="messages + memories")
    reserve_share: float = Field(default=0.15, gt=0, lt=1, description="the reply's headroom")

    @model_validator(mode="after")
    def _shares_fit(self) -> ModelWindow:
        total = self.system_share + self.tools_share + self.history_share + self.reserve_share
        if total > 1.0 + 1e-9:
            raise ValueError(f"the shares of the window add up to {total:.2f}, over 1")
        return self


class ContextSettings(ModelWindow):
    """The in-flight context: budget, thresholds, sliding window, assembly.

    The window fields are the default for every model; ``models`` overrides them per
    model name (``[context.models."gpt-4o"] window_tokens = 128000``).
    """

    models: dict[str, ModelWindow] = Field(default_factory=dict)
    memory_share: float = Field(
        default=0.10, ge=0, lt=1, description="relevant memories, taken from the history share"
    )
    max_history_messages: int = Field(default=50, ge=2, description="the sliding window")
    proactive_at: float = Field(default=0.60, gt=0, lt=1, description="silent checkpoint")
    warning_at: float = Field(default=0.75, gt=0, lt=1, description="wrap-up message")
    critical_at: float = Field(default=0.85, gt=0, le=1, description="checkpoint + compression")
    rearm_margin: float = Field(
        default=0.10, ge=0, lt=1, description="a level fires again after usage falls this far"
    )
    compress_to: float = Field(
        default=0.40, gt=0, lt=1, description="usage that compression aims for (under 60 %)"
    )
    summary_max_tokens: int = Field(default=600, ge=50, description="the compression summary")
    index_max_tokens: int = Field(default=300, ge=50, description="the memory index table")
    min_relevance: float = Field(
        default=0.25, ge=0, le=1, description="memories less relevant than this x the best stay out"
    )
    relevance_weight: float = Field(default=0.6, ge=0, description="memory scoring")
    recency_weight: float = Field(default=0.2, ge=0, description="memory scoring")
    importance_weight: float = Field(default=0.2, ge=0, description="memory scoring")
    max_tool_rounds: int = Field(default=8, ge=1, description="LLM calls per step")

    @model_validator(mode="after")
    def _thresholds_ordered(self) -> ContextSettings:
        if not self.compress_to < self.proactive_at < self.warning_at < self.critical_at:
            raise ValueError("need compress_to < proactive_at < warning_at < critical_at")
        return self

    def window(self, model: str | None) -> ModelWindow:
        """The window of ``model`` (its override, else the defaults)."""
        if model and model in self.models:
            return self.models[model]
        return ModelWindow(**{name: getattr(self, name) for name in ModelWindow.model_fields})


class BeliefSettings(BaseModel):
    """The belief lifecycle (docs/design.md, "Beliefs")."""

    half_life_days: float = Field(default=30.0, gt=0, description="confidence decay at read")
    initial_confidence: float = Field(default=0.6, gt=0, le=1)
    reinforce_step: float = Field(default=0.1, gt=0, le=1, description="added on reinforcement")
    reinforce_above: float = Field(default=0.85, gt=0, le=1, description="similarity: same belief")
    check_above: float = Field(
        default=0.7, gt=0, le=1, description="similarity: check contradiction"
    )
    context_at: float = Field(default=0.8, gt=0, le=1, description="enters context as known")
    uncertain_at: float = Field(default=0.5, gt=0, le=1, description="below: an open question")
    prune_below: float = Field(default=0.1, ge=0, le=1, description="maintenance prunes below")


class LLMSettings(BaseModel):
    """The chat model: an OpenAI-compatible endpoint (unset = no LLM)."""

    base_url: str | None = Field(
        default=None, description="an OpenAI-compatible chat endpoint; unset = no LLM"
    )
    model: str | None = Field(default=None, description="the chat model's name")
    api_key: SecretStr | None = None
    timeout_s: float = Field(default=60.0, gt=0, description="per LLM request")
    max_retries: int = Field(default=3, ge=0, description="with exponential backoff")
    breaker_failures: int = Field(
        default=3, ge=1, description="failed LLM calls in a row that open the circuit breaker"
    )
    breaker_cooldown_s: float = Field(
        default=30.0, gt=0, description="while open, LLM calls fail at once for this long"
    )
    price_in_per_mtok: float = Field(default=0.0, ge=0, description="USD per 1M prompt tokens")
    price_out_per_mtok: float = Field(default=0.0, ge=0, description="USD per 1M completion tokens")
    daily_budget_usd: float | None = Field(
        default=None,
        gt=0,
        description="USD per UTC day (ledger); past it the agent pauses (unset = no cap)",
    )


class EmbeddingSettings(BaseModel):
    """The vector half of hybrid search."""

    provider: Literal["local", "openai", "none"] = Field(
        default="local", description="local = all-MiniLM-L6-v2 offline; none = full-text only"
    )
    model: str | None = Field(default=None, description="openai: the model name")
    base_url: str | None = Field(default=None, description="openai: an OpenAI-compatible URL")
    api_key: SecretStr | None = None
    dims: int | None = Field(default=None, ge=1, description="openai: vector size")


class DaemonSettings(BaseModel):
    """The long-lived agent (``aether up``)."""

    consumer: str = Field(
        default="main",
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description="this daemon's name in the inbox consumer group",
    )
    session: str = Field(
        default="main",
        pattern=r"^[A-Za-z0-9_.-]{1,128}$",
        description="chat session of messages that name none",
    )
    heartbeat_interval_s: float = Field(default=1800.0, gt=0)
    maintenance_interval_s: float = Field(default=86_400.0, gt=0)
    shutdown_grace_s: float = Field(
        default=8.0, ge=0, description="on SIGTERM: time the current message gets to finish"
    )
    max_deliveries: int = Field(
        default=3, ge=1, description="a message failing this often is answered with the error"
    )
    claim_idle_s: float = Field(
        default=60.0, gt=0, description="take over messages another consumer left this long"
    )
    outbox_maxlen: int = Field(default=10_000, ge=100)


class ToolSettings(BaseModel):
    """The agent's tools: the operator's policy, approvals, budgets and caps ("Tools")."""

    allow: str = Field(default="", description="tool-name globs always allowed (comma-separated)")
    ask: str = Field(default="", description="tool-name globs that need an operator's approval")
    deny: str = Field(default="", description="tool-name globs never run")
    approval_timeout_s: float = Field(
        default=600.0, gt=0, description="an unanswered approval request is denied after this"
    )
    max_calls: int = Field(default=20, ge=1, description="tool calls per message and per heartbeat")
    repeat_limit: int = Field(
        default=3, ge=2, description="the same call with the same arguments this often is stopped"
    )
    max_failures: int = Field(
        default=3, ge=1, description="failed tool calls in a row that end the turn"
    )
    output_chars: int = Field(
        default=16_000, ge=256, description="a tool's output is cut to this many characters"
    )
    read_bytes: int = Field(default=256 * 1024, ge=1024, description="read_file and grep, per file")
    write_bytes: int = Field(default=1024 * 1024, ge=1, description="write_file and edit_file")
    bash_timeout_s: float = Field(
        default=30.0, gt=0, le=3600, description="bash: the process group is killed after this"
    )
    mcp_timeout_s: float = Field(default=60.0, gt=0, description="one MCP tool call")

    def patterns(self, decision: Literal["allow", "ask", "deny"]) -> list[str]:
        """The globs of one decision, as a list."""
        return [p.strip() for p in getattr(self, decision).split(",") if p.strip()]


class McpSettings(BaseModel):
    """The MCP server (``aether mcp`` on stdio; streamable HTTP inside ``aether up``)."""

    port: int | None = Field(default=None, ge=1, le=65535, description="unset = no HTTP server")
    host: str = "127.0.0.1"
    token: SecretStr | None = Field(default=None, description="bearer token; required for HTTP")


class ConsoleSettings(BaseModel):
    """The operator console (``aether console``)."""

    host: str = Field(default="127.0.0.1", description="bind address (loopback by default)")
    port: int = Field(default=8765, ge=1, le=65535)
    token: SecretStr | None = Field(
        default=None,
        description="login token (unset: one generated on first start, kept 0600 in the home)",
    )


LogFormat = Literal["auto", "console", "json"]


class LogSettings(BaseModel):
    """Logging."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    console_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "WARNING"
    # auto: readable lines on a terminal, JSON lines when piped (to a collector, say)
    format: LogFormat = "auto"
    file_max_bytes: int = Field(default=10 * 1024 * 1024, ge=1024)
    file_backups: int = Field(default=5, ge=0)


RENAMED: dict[str, tuple[str, str]] = {
    "embeddings": ("embedding", "provider"),
    **{
        f"llm_{name}": ("llm", name)
        for name in (
            "base_url",
            "model",
            "api_key",
            "timeout_s",
            "max_retries",
            "breaker_failures",
            "breaker_cooldown_s",
            "price_in_per_mtok",
            "price_out_per_mtok",
        )
    },
}
"""Settings of older releases (flat) and where they live now (group, field). Their old
environment names (``AETHER_EMBEDDINGS``, ``AETHER_LLM_MODEL``...) and flat keys in the
TOML file or in code are still read, after the new ones, with a deprecation notice, until
the release :data:`RENAMED_UNTIL` removes them."""

RENAMED_UNTIL = "0.3.0"
"""The release that stops reading the old names of :data:`RENAMED`."""


def deprecated_in_use(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(old, new) environment names of the renamed settings set in ``environ``."""
    environ = os.environ if environ is None else environ
    return [
        (f"AETHER_{old.upper()}", f"AETHER_{group.upper()}__{field.upper()}")
        for old, (group, field) in RENAMED.items()
        if f"AETHER_{old.upper()}" in environ
    ]


def _nest_renamed(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with flat renamed keys moved into their groups (a new-style value wins)."""
    out = dict(data)
    for old, (group, field) in RENAMED.items():
        if old in out:
            value = out.pop(old)
            nested = out.get(group)
            nested = dict(nested) if isinstance(nested, Mapping) else {}
            nested.setdefault(field, value)
            out[group] = nested
    return out


class RenamedEnvironment(PydanticBaseSettingsSource):
    """The old environment names of renamed settings (:data:`RENAMED`), below the new ones."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        """Unused: :meth:`__call__` reads every old name at once."""
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        """The old names' values, nested where the settings live now."""
        return _nest_renamed(
            {
                old: os.environ[f"AETHER_{old.upper()}"]
                for old in RENAMED
                if f"AETHER_{old.upper()}" in os.environ
            }
        )


class Settings(BaseSettings):
    """The effective configuration of one aether process."""

    model_config = SettingsConfigDict(
        env_prefix="AETHER_",
        env_nested_delimiter="__",
        extra="forbid",
    )

    home: Path = Field(default_factory=_default_home, description="data, logs and sockets")
    namespace: str = Field(default="aether", min_length=1, max_length=64)
    redis_url: SecretStr | None = Field(default=None, description="unset = embedded server")
    redis_cluster: bool = Field(
        default=False,
        description="AETHER_REDIS_URL names a Redis Cluster node (the namespace needs a {tag})",
    )
    redis_port: int | None = Field(
        default=None, ge=1, le=65535, description="embedded server: also listen on 127.0.0.1"
    )
    redis_appendfsync: Literal["always", "everysec", "no"] = "always"
    redis_chain_module: bool = Field(
        default=True,
        description=(
            "embedded server: load the journal chain's C module (built once with the "
            "system's C compiler and OpenSSL; without either, Lua does the same, slower)"
        ),
    )
    redis_pool_size: int = Field(
        default=64,
        ge=1,
        le=10_000,
        description="connections one process's client opens at most; more calls wait",
    )
    redis_pool_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="how long a call waits for a free connection of the pool",
    )
    postgres_dsn: SecretStr | None = Field(default=None, description="unset = no archive")
    mongo_url: SecretStr | None = Field(
        default=None, description="tool registry + agent ledger in MongoDB (unset = Redis)"
    )
    qdrant_url: str | None = Field(default=None, description="mirror vectors to this Qdrant")
    qdrant_path: Path | None = Field(default=None, description="or to a local-mode Qdrant here")
    qdrant_search: bool = Field(
        default=False, description="search vectors in Qdrant instead of the Redis index"
    )
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    identity_dir: Path | None = Field(
        default=None, description="identity markdown for the first boot (unset = the default)"
    )
    llm: LLMSettings = Field(default_factory=lambda: LLMSettings())
    archetype: Literal["general", "coding"] = Field(
        default="general", description="the domain: extractors and context strategy"
    )
    context: ContextSettings = Field(default_factory=ContextSettings)
    beliefs: BeliefSettings = Field(default_factory=BeliefSettings)
    daemon: DaemonSettings = Field(default_factory=DaemonSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    console: ConsoleSettings = Field(default_factory=ConsoleSettings)
    workspace: Path | None = Field(
        default=None,
        description="the file tools' and bash's only directory (unset = $AETHER_HOME/workspace)",
    )
    mcp_servers: Path | None = Field(
        default=None,
        description='a JSON file of MCP servers whose tools the agent may use ("mcpServers")',
    )
    tools: ToolSettings = Field(default_factory=ToolSettings)
    checkpoints: CheckpointSettings = Field(default_factory=CheckpointSettings)
    archive: ArchiveSettings = Field(default_factory=ArchiveSettings)
    journal: JournalSettings = Field(default_factory=JournalSettings)
    otel: OtelSettings = Field(default_factory=OtelSettings)
    log: LogSettings = Field(default_factory=LogSettings)

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: Any) -> Any:
        return _nest_renamed(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _llm_rerank_has_an_llm(self) -> Self:
        if self.memory.rerank == "llm" and not (self.llm.base_url and self.llm.model):
            raise ValueError(
                "AETHER_MEMORY__RERANK=llm needs an LLM to judge relevance: set "
                "AETHER_LLM__BASE_URL and AETHER_LLM__MODEL"
            )
        return self

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied (not validated, as pydantic's).

        A group given as a mapping (``{"llm": {"model": "m"}}``) updates only those fields
        of the group; an old flat name (``"embeddings"``, ``"llm_model"``) lands in its
        group, so code written for an older release keeps working.
        """
        changes: dict[str, Any] = {}
        for key, value in _nest_renamed(dict(update or {})).items():
            current = getattr(self, key, None)
            if isinstance(value, Mapping) and isinstance(current, BaseModel):
                value = current.model_copy(update=dict(value))
            changes[key] = value
        return super().model_copy(update=changes, deep=deep)

    @field_validator("home", "qdrant_path", "identity_dir", "workspace", "mcp_servers")
    @classmethod
    def _absolute(cls, value: Path | None) -> Path | None:
        """A relative path, taken from the current directory once, here.

        The embedded Redis, the daemon and the sandbox all work in other directories.
        """
        return None if value is None else value.expanduser().absolute()

    @field_validator("namespace")
    @classmethod
    def _namespace_is_plain(cls, value: str) -> str:
        allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.{}")
        if not set(value) <= allowed or ":" in value:
            raise ValueError(
                "namespace may hold letters, digits, '_', '-', '.' and a {hash tag}; "
                "no ':' or spaces"
            )
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Constructor arguments, then environment, then the optional TOML file."""
        toml_path = Path(os.environ.get("AETHER_CONFIG_FILE", str(DEFAULT_CONFIG_FILE)))
        sources: list[PydanticBaseSettingsSource] = [
            init_settings,
            env_settings,
            RenamedEnvironment(settings_cls),
        ]
        if toml_path.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_path))
        return tuple(sources)

    @property
    def redis_dir(self) -> Path:
        """Data directory of the embedded Redis server."""
        return self.home / "redis"

    @property
    def workspace_dir(self) -> Path:
        """The agent's workspace: ``workspace`` or ``$AETHER_HOME/workspace``."""
        return self.workspace if self.workspace is not None else self.home / "workspace"

    @property
    def log_dir(self) -> Path:
        """Directory of the rotating log file."""
        return self.home / "logs"

    def masked(self) -> dict[str, Any]:
        """The effective configuration as plain data, secrets masked."""
        data = self.model_dump(mode="json")
        if self.embedding.api_key is not None:
            data["embedding"]["api_key"] = "***"
        if self.llm.api_key is not None:
            data["llm"]["api_key"] = "***"
        if self.mcp.token is not None:
            data["mcp"]["token"] = "***"
        for name in ("redis_url", "postgres_dsn", "mongo_url"):
            secret = getattr(self, name)
            data[name] = None if secret is None else _mask_url(secret.get_secret_value())
        return data


def _mask_url(url: str) -> str:
    """Hide the password of a URL such as ``redis://user:pw@host`` or ``?password=pw``."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _, hostinfo = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:***@{hostinfo}"
    query = urlencode(
        [(k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(parts.query)]
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def load_settings(**overrides: Any) -> Settings:
    """Build the settings once per entry point.

    Raises:
        ConfigError: when a value is invalid; the message names the field.
    """
    from pydantic import ValidationError

    from aether.errors import ConfigError

    try:
        return Settings(**overrides)
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as e:
        name = os.environ.get("AETHER_CONFIG_FILE", str(DEFAULT_CONFIG_FILE))
        raise ConfigError(f"cannot read the configuration file {name}: {e}") from e
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'config'}: {err['msg']}"
            for err in e.errors()
        )
        raise ConfigError(f"invalid configuration: {problems}") from e
