"""The keyspace: every Redis key and index name aether uses, built from the namespace.

No other module spells a key. A person can find any state with ``redis-cli`` by reading
this file (or the keyspace reference, docs/reference/keyspace.md, generated from it).

For Redis Cluster, give the namespace a hash tag (``AETHER_NAMESPACE={aether}``): every key
of one agent then hashes to one slot, so multi-key scripts stay legal.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import cached_property
from urllib.parse import quote, unquote

# Key families outside the journaled (rolled-back) state: caches, ephemeral working
# memory, liveness data, message queues and the checkpoint machinery itself.
_NON_STATE_FAMILIES: tuple[str, ...] = (
    "journal",
    "journal:",
    "checkpoint:",
    "checkpoints",
    "checkpoints:",
    "rollbacks",
    "lock:",
    "tmp:",
    "archive:",
    "scratchpad:",
    "tools:",
    "system:heartbeat_state",
    "inbox",
    "outbox",
    "events",
    "embcache:",
    "embcache",
    "memory:idx",
    "memory:idx:",
    "daemon:",
    "rpc:",
    "ledger",
    "approval:",
    "approvals",
    "erasures",
    "forks",
)
_NON_STATE_NAMES = frozenset(f for f in _NON_STATE_FAMILIES if not f.endswith(":"))
_NON_STATE_PREFIXES = tuple(f for f in _NON_STATE_FAMILIES if f.endswith(":"))

# Hash families whose whole hash is one item (an entity, a relation, a memory's vector):
# erasure removes the whole key. Every other hash is a collection of items (tasks, goals,
# identity files, profile fields): erasure removes the fields that hold the text.
_ITEM_HASH_FAMILIES: tuple[str, ...] = (
    "entity:",
    "relation:",
    "vec:",
    "pattern:",
    "approval:",
    "langgraph:checkpoint:",
    "langgraph:blob:",
    "langgraph:write:",
    "langgraph:item:",
)

# Keys that belong to an item (family -> the item's family, same id).
_OWNED: tuple[tuple[str, str], ...] = (
    ("beliefs:history:", "belief"),
    ("rel:out:", "entity"),
    ("rel:in:", "entity"),
    ("rel:retired:", "entity"),
)
_OWNED_FAMILIES = tuple(family for family, _ in _OWNED)

# Families whose keys are named by what the agent or its caller chose (a session, a thread,
# a scratchpad, a tool, a store namespace). A plain family's rest is one name as given; a
# LangGraph family's rest is percent-encoded parts (``_part``): a thread's key is named by
# the first (the thread id), a store item's by its namespace's labels (joined by ``.``)
# and its key. The fixed names under them are not names.
_PLAIN, _THREAD, _LABELLED = "plain", "thread", "labelled"
_NAMED_FAMILIES: tuple[tuple[str, str], ...] = (
    ("chat:session:", _PLAIN),
    ("chat:messages:", _PLAIN),
    ("episode:", _PLAIN),
    ("timeline:", _PLAIN),
    ("scratchpad:", _PLAIN),
    ("tools:", _PLAIN),
    ("registry:", _PLAIN),
    ("lock:registry:", _PLAIN),
    ("langgraph:ns:", _THREAD),
    ("langgraph:checkpoints:", _THREAD),
    ("langgraph:checkpoint:", _THREAD),
    ("langgraph:blobs:", _THREAD),
    ("langgraph:blob:", _THREAD),
    ("langgraph:writes:", _THREAD),
    ("langgraph:write:", _THREAD),
    ("langgraph:item:", _LABELLED),
    ("langgraph:store:keys:", _LABELLED),
)
_FIXED_NAMES = frozenset({"chat:session:index"})
_LEARNED = "learned:"
"""The maintenance state's field per session (``aether.memory.knowledge.learner``)."""
STORE_TAG_PREFIX = "lg:"
"""How the LangGraph store's namespace tags begin (``aether.integrations.langgraph.items``)."""

# Tier of a state key, by family prefix; used to group diffs and journal reports.
_TIERS: tuple[tuple[str, str], ...] = (
    ("identity:", "identity"),
    ("user:", "identity"),
    ("system:", "identity"),
    ("daily:", "daily"),
    ("longterm:", "longterm"),
    ("belief:", "beliefs"),
    ("beliefs:", "beliefs"),
    ("tasks", "tasks"),
    ("goals", "tasks"),
    ("event:", "events"),
    ("timeline:", "events"),
    ("entity:", "graph"),
    ("entities:", "graph"),
    ("rel:", "graph"),
    ("relation:", "graph"),
    ("decision:", "decisions"),
    ("failure:", "failures"),
    ("pattern", "failures"),
    ("repo", "repositories"),
    ("registry", "registry"),
    ("chat:", "chat"),
    ("episode:", "episodes"),
    ("memory:", "memory index"),
    ("vec:", "vectors"),
    ("maintenance:", "maintenance"),
    ("langgraph:", "threads"),
)


@dataclass(frozen=True)
class Keyspace:
    """Builds the key names of one namespace.

    Args:
        ns: the namespace, e.g. ``aether`` or ``{aether}`` for Redis Cluster.
    """

    ns: str

    def _k(self, *parts: str) -> str:
        return ":".join((self.ns, *parts))

    @cached_property
    def prefix(self) -> str:
        """Every key of the namespace starts with this."""
        return f"{self.ns}:"

    @property
    def every_key(self) -> str:
        """A SCAN ``MATCH`` pattern for every key of the namespace (glob characters escaped)."""
        return "".join(f"\\{ch}" if ch in "*?[]\\" else ch for ch in self.prefix) + "*"

    # identity layer
    def identity_profile(self) -> str:
        """HASH: name, emoji, voice_style, autonomy_mode, created_at, updated_at."""
        return self._k("identity", "profile")

    def user_profile(self) -> str:
        """HASH: operator name, timezone, projects, priorities, preferences."""
        return self._k("user", "profile")

    def identity_files(self) -> str:
        """HASH: identity file name -> markdown."""
        return self._k("identity", "files")

    def system_flags(self) -> str:
        """HASH: whether (and when) an identity was bootstrapped."""
        return self._k("system", "flags")

    def heartbeat_state(self) -> str:
        """HASH: last beat, check rotation, alert history."""
        return self._k("system", "heartbeat_state")

    # memory layer
    def daily(self, day: date) -> str:
        """LIST: ids of the entries of one day, chronological."""
        return self._k("daily", day.isoformat())

    def daily_entry(self, entry_id: str) -> str:
        """JSON: one daily log entry."""
        return self._k("daily", "entry", entry_id)

    def longterm(self, memory_id: str) -> str:
        """JSON: one distilled long-term memory."""
        return self._k("longterm", memory_id)

    def belief(self, belief_id: str) -> str:
        """JSON: one belief."""
        return self._k("belief", belief_id)

    def belief_history(self, belief_id: str) -> str:
        """LIST: a belief's changes (JSON: create, reinforce, contradict, forget, prune)."""
        return self._k("beliefs", "history", belief_id)

    def tasks(self) -> str:
        """HASH: task id -> task (JSON: title, notes, status, priority, due, goal, times)."""
        return self._k("tasks")

    def goals(self) -> str:
        """HASH: goal id -> goal (JSON: title, notes, status, created_at, done_at)."""
        return self._k("goals")

    def registry(self) -> str:
        """ZSET: registered tool name -> its latest version."""
        return self._k("registry")

    def registry_tool(self, name: str) -> str:
        """LIST: every version of one registered tool (JSON), oldest first."""
        return self._k("registry", name)

    def registry_lock(self, name: str) -> str:
        """STRING with TTL: held while one tool is being registered."""
        return self._k("lock", "registry", name)

    def ledger(self) -> str:
        """STREAM: the agent ledger, append-only (actions, LLM calls, tokens, cost)."""
        return self._k("ledger")

    def approval(self, approval_id: str) -> str:
        """HASH with TTL (30 days): one tool call waiting for (or given) an operator's decision."""
        return self._k("approval", approval_id)

    def approvals(self) -> str:
        """ZSET: approval request ids by the time they were asked (trimmed to 30 days)."""
        return self._k("approvals")

    def scratchpad(self, pad_id: str) -> str:
        """STRING with TTL (default 3600 s): ephemeral working memory."""
        return self._k("scratchpad", pad_id)

    def episode(self, session: str) -> str:
        """LIST: tool calls of one session, capped at 50."""
        return self._k("episode", session)

    def tools(self, session: str) -> str:
        """STRING (JSON) with 24 h TTL: tool schema cache of one session."""
        return self._k("tools", session)

    def chat_session(self, session: str) -> str:
        """HASH: metadata of one chat session."""
        return self._k("chat", "session", session)

    def chat_messages(self, session: str) -> str:
        """ZSET: messages of one chat session, scored by timestamp."""
        return self._k("chat", "messages", session)

    def chat_session_index(self) -> str:
        """ZSET: chat sessions, most recent first (score = last activity)."""
        return self._k("chat", "session", "index")

    def embedding_cache(self) -> str:
        """Name (key prefix) of redisvl's embeddings cache; entries have a 30-day TTL."""
        return self._k("embcache")

    # relational memory (docs/design.md, "Entity graph and events")
    def event(self, event_id: str) -> str:
        """JSON: an event (type, actor, content, outcome, parent, duration, keywords, scope)."""
        return self._k("event", event_id)

    def timeline(self, session: str) -> str:
        """ZSET: a session's event ids by time."""
        return self._k("timeline", session)

    def entity(self, entity_id: str) -> str:
        """HASH: an entity (type, name, aliases, salience, mentions, first/last seen, scope)."""
        return self._k("entity", entity_id)

    def entity_names(self) -> str:
        """ZSET by name: ``lower-case name or alias, US (0x1f), entity id``."""
        return self._k("entities", "names")

    def relations_out(self, entity_id: str) -> str:
        """ZSET: ``type, US, target id`` -> weight, the entity's outgoing relations."""
        return self._k("rel", "out", entity_id)

    def relations_retired(self, entity_id: str) -> str:
        """ZSET: ``type, US, target id`` -> valid_to, the entity's retired outgoing relations."""
        return self._k("rel", "retired", entity_id)

    def relations_in(self, entity_id: str) -> str:
        """ZSET: ``type, US, source id`` -> weight, the entity's incoming relations."""
        return self._k("rel", "in", entity_id)

    def relation(self, relation_id: str) -> str:
        """HASH: a relation (type, source, target, weight, evidence; status when retired)."""
        return self._k("relation", relation_id)

    def decision(self, decision_id: str) -> str:
        """JSON: a decision and its outcome."""
        return self._k("decision", decision_id)

    def failure(self, failure_id: str) -> str:
        """JSON: a failure with its pattern key."""
        return self._k("failure", failure_id)

    def failure_patterns(self) -> str:
        """ZSET: failure pattern key -> occurrences."""
        return self._k("patterns")

    def failure_pattern(self, pattern: str) -> str:
        """HASH: one failure pattern (count, first/last seen, detected_at, example)."""
        return self._k("pattern", pattern)

    def repos(self) -> str:
        """ZSET: indexed repository ids by last index time."""
        return self._k("repos")

    def repo(self, repo_id: str) -> str:
        """HASH: a repository's root, languages and last index."""
        return self._k("repo", repo_id)

    def repo_files(self, repo_id: str) -> str:
        """ZSET: a repository's file paths -> time indexed."""
        return self._k("repo", repo_id, "files")

    def repo_file(self, repo_id: str, path_id: str) -> str:
        """JSON: one file (language, content hash, imports, resolved imports, symbols)."""
        return self._k("repo", repo_id, "file", path_id)

    # framework state (aether.integrations): LangGraph threads and its long-term store.
    # Names taken from outside (thread ids, checkpoint namespaces, channels) are
    # percent-encoded, so that a ``:`` in one never reads as a separator.
    def lg_threads(self) -> str:
        """SET: the LangGraph thread ids that have checkpoints."""
        return self._k("langgraph", "threads")

    def lg_namespaces(self, thread_id: str) -> str:
        """SET: the checkpoint namespaces (``""`` is the root graph's) of one thread."""
        return self._k("langgraph", "ns", _part(thread_id))

    def lg_checkpoints(self, thread_id: str, checkpoint_ns: str) -> str:
        """ZSET: checkpoint ids of one thread and namespace (score 0: ordered by id)."""
        return self._k("langgraph", "checkpoints", _part(thread_id), _part(checkpoint_ns))

    def lg_checkpoint(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
        """HASH: one checkpoint without its channel values, its metadata and its parent.

        Fields ``checkpoint_type``/``checkpoint``, ``metadata_type``/``metadata`` (the
        serializer's bytes), ``parent`` and ``text`` (a readable rendering).
        """
        return self._k(
            "langgraph", "checkpoint", _part(thread_id), _part(checkpoint_ns), _part(checkpoint_id)
        )

    def lg_blob(self, thread_id: str, checkpoint_ns: str, channel: str, version: str) -> str:
        """HASH: one channel's value at one version.

        Fields ``ns``, ``channel``, ``version``, ``type``/``data`` (the serializer's), ``text``.
        """
        return self._k(
            "langgraph",
            "blob",
            _part(thread_id),
            _part(checkpoint_ns),
            _part(channel),
            _part(version),
        )

    def lg_blobs(self, thread_id: str) -> str:
        """SET: the blob keys of one thread (what deleting the thread removes)."""
        return self._k("langgraph", "blobs", _part(thread_id))

    def lg_writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
        """SET: the keys of the pending writes stored against one checkpoint."""
        return self._k(
            "langgraph", "writes", _part(thread_id), _part(checkpoint_ns), _part(checkpoint_id)
        )

    def lg_write(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, task_id: str, idx: int
    ) -> str:
        """HASH: one pending write.

        Fields ``task_id``, ``idx``, ``channel``, ``type``/``data``, ``task_path``, ``text``.
        """
        return self._k(
            "langgraph",
            "write",
            _part(thread_id),
            _part(checkpoint_ns),
            _part(checkpoint_id),
            _part(task_id),
            str(idx),
        )

    def lg_item(self, namespace: tuple[str, ...], item_key: str) -> str:
        """HASH: one item of LangGraph's long-term store (``AetherStore``).

        Named ``<labels joined by '.'>:<key>`` (a label has no ``.``). Fields
        ``namespace`` and ``value`` (JSON), ``key``, ``created_at``, ``updated_at``,
        ``expires_at`` (epoch seconds, ``0``: never), ``ttl_s`` and ``memory`` (the id of
        the long-term memory search finds it by, ``""``: not indexed).
        """
        return self._k("langgraph", "item", _part(".".join(namespace)), _part(item_key))

    def lg_store_namespaces(self) -> str:
        """SET: the store's namespaces that hold items (labels joined by ``.``)."""
        return self._k("langgraph", "store", "namespaces")

    def lg_store_keys(self, namespace: tuple[str, ...]) -> str:
        """ZSET: the item keys of one store namespace, scored by last update (epoch s)."""
        return self._k("langgraph", "store", "keys", _part(".".join(namespace)))

    def lg_store_memories(self) -> str:
        """HASH: memory id -> the store item it indexes (``[labels, key]`` as JSON)."""
        return self._k("langgraph", "store", "memories")

    def memory_index(self) -> str:
        """FT index over daily entries, long-term memories and beliefs."""
        return self._k("memory", "idx")

    def vector(self, doc_key: str) -> str:
        """HASH: a memory's vector (binary) and the fields vector search filters on.

        Named after its document: ``ns:vec:`` + the document key without ``ns:``.
        """
        return self._k("vec", doc_key[len(self.prefix) :])

    def passage_vector(self, doc_key: str, n: int) -> str:
        """HASH: the vector of passage ``n`` (2, 3, ...) of a long memory.

        Passage 1 is :meth:`vector`; the same prefix puts them under the same index.
        """
        return _passage(self.vector(doc_key), n)

    def readings(self, doc_key: str, passages: int) -> list[str]:
        """:meth:`vector`, then :meth:`passage_vector` 2 to ``passages``, of one memory."""
        first = self.vector(doc_key)
        return [first, *(_passage(first, n) for n in range(2, passages + 1))]

    def document_of_vector(self, vector_key: str) -> str:
        """The document key a vector or passage hash belongs to.

        The inverse of :meth:`vector` and :meth:`passage_vector`.
        """
        return self.prefix + vector_key[len(self.vector_prefix()) :].split("#", 1)[0]

    def vector_prefix(self) -> str:
        """Key prefix of the vector hashes."""
        return self._vector_prefix

    @cached_property
    def _vector_prefix(self) -> str:
        # asked for every key an erasure reads: built once
        return self._k("vec", "")

    def vector_index(self) -> str:
        """FT index over the vector hashes (HNSW, cosine)."""
        return self._k("memory", "idx", "vectors")

    def scoped_index_prefix(self) -> str:
        """Names of the FT indexes over one tag's vector hashes (a digest follows)."""
        return self._k("memory", "idx", "vectors", "tag", "")

    def vector_index_schema(self) -> str:
        """STRING: fingerprint of the vector index schema."""
        return self._k("memory", "idx", "vectors", "schema")

    def memory_layout(self) -> str:
        """STRING: the memory storage layout (``2``: vectors in hashes), journaled."""
        return self._k("memory", "layout")

    def memory_index_schema(self) -> str:
        """STRING: fingerprint of the index schema, to rebuild it when it changes."""
        return self._k("memory", "idx", "schema")

    def memory_topics(self) -> str:
        """ZSET: tag -> number of memories holding it (the memory index's rows)."""
        return self._k("memory", "topics")

    def memory_topics_seen(self) -> str:
        """ZSET: tag -> time (epoch s) of the latest memory holding it."""
        return self._k("memory", "topics", "seen")

    def memory_counts(self) -> str:
        """ZSET: memory kind (daily, longterm, belief) -> number of documents."""
        return self._k("memory", "counts")

    # checkpoints and journal
    def journal(self) -> str:
        """STREAM: every state mutation with its inverse."""
        return self._k("journal")

    def journal_legacy_head(self) -> str:
        """STRING: the chain's head as journal libraries before 25 kept it (now a digests field).

        The next entry moves it into :meth:`journal_digests` (``aether.store.chain_head``).
        """
        return self._k("journal", "head")

    def journal_digests(self) -> str:
        """HASH: state key -> digest of its content, as the journal's last entry left it.

        Also the chain's head, ``"<entry id> <hash>"``, in the field ``(head)``.
        """
        return self._k("journal", "digests")

    def journal_anchor(self) -> str:
        """HASH: where a trimmed or redacted chain starts and what re-chained it.

        ``trimmed_to`` (the first kept entry's predecessor hash, set by a trim);
        ``redactions`` (JSON list: each erasure that re-chained the redacted history).
        """
        return self._k("journal", "anchor")

    def forks(self) -> str:
        """HASH: fork namespace -> JSON of the fork (checkpoint, keys, when)."""
        return self._k("forks")

    def journal_signature(self) -> str:
        """HASH: the last signed head (``id``, ``h``, ``mac``: HMAC-SHA256 by the key)."""
        return self._k("journal", "signature")

    def checkpoint(self, checkpoint_id: str) -> str:
        """HASH: label, reason, actor, created_at, journal position."""
        return self._k("checkpoint", checkpoint_id)

    def checkpoints(self) -> str:
        """ZSET: checkpoint ids scored by creation time (ms)."""
        return self._k("checkpoints")

    def checkpoints_pruned(self) -> str:
        """ZSET: ids of pruned checkpoints (so a rollback to one says so), by prune time."""
        return self._k("checkpoints", "pruned")

    def rollbacks(self) -> str:
        """LIST: rollback records (JSON), newest first; ``undo`` reads the head."""
        return self._k("rollbacks")

    def admin_lock(self) -> str:
        """STRING with TTL: held during a rollback, undo or restore."""
        return self._k("lock", "admin")

    def write_hold(self) -> str:
        """HASH: a rollback in progress (target, cursor, progress); writes wait while it exists."""
        return self._k("lock", "writes")

    def diff_scratch(self, token: str) -> str:
        """Any type, TTL 60 s: a checkpoint's pre-image decoded for ``checkpoint diff``."""
        return self._k("tmp", "diff", token)

    def erasures(self) -> str:
        """LIST: erasure records (JSON: when, who, salted text hash, counts), newest first."""
        return self._k("erasures")

    def erase_scratch(self, name: str) -> str:
        """Any type: an erasure's working keys (the rebuilt journal, a payload being redacted)."""
        return self._k("tmp", "erase", name)

    def archive_cursor(self) -> str:
        """STRING: id of the last journal entry copied to the PostgreSQL archive.

        While it exists, journal entries keep the values they wrote (for replay).
        """
        return self._k("archive", "cursor")

    # runtime
    def daemon_presence(self) -> str:
        """STRING with TTL (15 s, renewed while ``aether up`` runs): the daemon's lease.

        Its value is the holder as JSON (pid, host, started_at, instance).
        """
        return self._k("daemon", "alive")

    def daemon_health(self) -> str:
        """STRING with TTL (15 s, rewritten with each beat): the daemon's state as JSON.

        ``{"state": "up"|"degraded", "reasons": [...], "at": epoch}``; absent while it starts.
        """
        return self._k("daemon", "health")

    def embed_requests(self) -> str:
        """STREAM: embedding requests the daemon answers (so a CLI needs no model load)."""
        return self._k("rpc", "embed")

    def embed_reply(self, request_id: str) -> str:
        """LIST with TTL (30 s): the daemon's answer to one embedding request."""
        return self._k("rpc", "reply", request_id)

    def daemon_maintenance(self) -> str:
        """HASH: the last maintenance run (when, by whom, its report as JSON)."""
        return self._k("daemon", "maintenance")

    def job_lock(self, job: str) -> str:
        """STRING with TTL: held by the daemon running one scheduled job."""
        return self._k("lock", "job", job)

    def maintenance_state(self) -> str:
        """HASH: watermarks, journaled with the memories.

        ``reflected_until``; ``learned:<session>``: the chat position knowledge was
        extracted up to.
        """
        return self._k("maintenance", "state")

    def inbox(self) -> str:
        """STREAM: messages to the running agent (consumer group ``agent``)."""
        return self._k("inbox")

    def outbox(self) -> str:
        """STREAM: messages from the running agent."""
        return self._k("outbox")

    def events(self) -> str:
        """Pub/sub channel: rollback, identity change, maintenance done."""
        return self._k("events")

    # classification
    def owns(self, key: str) -> bool:
        """Whether ``key`` belongs to this namespace."""
        return key.startswith(self.prefix)

    def is_state(self, key: str) -> bool:
        """Whether ``key`` is journaled agent state (rolled back, archived)."""
        if not self.owns(key):
            return False
        rest = key[len(self.prefix) :]
        return rest not in _NON_STATE_NAMES and not rest.startswith(_NON_STATE_PREFIXES)

    def non_state_names(self) -> list[str]:
        """Exact names of the non-state keys (journal, checkpoints zset, queues...)."""
        return [self.prefix + f for f in _NON_STATE_FAMILIES if not f.endswith(":")]

    def non_state_prefixes(self) -> list[str]:
        """Prefixes of the non-state key families (scratchpads, caches, locks...)."""
        return [self.prefix + f for f in _NON_STATE_FAMILIES if f.endswith(":")]

    def is_item_hash(self, key: str) -> bool:
        """Whether a hash key is one item (erased whole) rather than a collection of items."""
        rest = key[len(self.prefix) :] if self.owns(key) else key
        return rest.startswith(_ITEM_HASH_FAMILIES)

    def is_vector(self, key: str) -> bool:
        """Whether a key is a memory's vector (or passage) hash."""
        return key.startswith(self.vector_prefix())

    def owner(self, key: str) -> str | None:
        """The item a key belongs to, if it belongs to one (erased with it).

        A vector's (or passage's) document, a belief history's belief, an entity's relation
        sets' entity.
        """
        if key.startswith(self.vector_prefix()):
            return self.document_of_vector(key)
        rest = key[len(self.prefix) :] if self.owns(key) else key
        if not rest.startswith(_OWNED_FAMILIES):
            return None
        for family, owner in _OWNED:
            if rest.startswith(family):
                return self._k(owner, rest[len(family) :])
        return None

    def item_mark(self, key: str) -> str:
        """What a key shares with the item it belongs to: its last part before any ``#``.

        A key :meth:`owner` names an item for ends with the item's own name less its
        family (a vector's document with a ``#`` and a passage's number after it), so
        ``item_mark(key) == item_mark(owner(key))``. A key whose mark is no erased item's
        belongs to none of them: an erasure rules out a journal entry's keys together by
        their marks (:meth:`~aether.store.redaction.Redactor.may_be_gone`).
        """
        rest = key[len(self.prefix) :] if self.owns(key) else key
        return rest.split("#", 1)[0].rsplit(":", 1)[-1]

    def named_parts(self, key: str) -> list[str]:
        """The parts of a key's name chosen outside aether, decoded: what the key is named by.

        A chat session's, episode's or timeline's session, a scratchpad's id, a tool's
        name, a LangGraph thread's id (not its checkpoints' ids or channels: the graph's
        own), a store item's namespace labels and key (``langgraph:item:users.marta:prefs``
        is named by ``users``, ``marta`` and ``prefs``). Empty for a key aether names itself
        (an item's generated id, a day, a fixed name) and for a key of another namespace.
        """
        return named_parts(key[len(self.prefix) :]) if self.owns(key) else []

    def named_members(self, key: str, member: bytes | str) -> list[str]:
        """The names a member or field of ``key`` is made of, where it is made of names.

        The LangGraph store's namespaces set holds each namespace's labels joined by
        ``.`` (``users.marta``), and the tag counts hold its memories' namespace tags
        (``lg:users.marta``, :func:`aether.integrations.langgraph.items.prefix_tag`): their
        labels. The maintenance state's ``learned:<session>`` fields: the session. Empty
        for any other member, field or key.
        """
        name = member.decode("utf-8", "replace") if isinstance(member, bytes) else member
        if key in (self.memory_topics(), self.memory_topics_seen()):
            if not name.startswith(STORE_TAG_PREFIX):
                return []
            name = name[len(STORE_TAG_PREFIX) :]
        elif key == self.maintenance_state():
            return [name[len(_LEARNED) :]] if name.startswith(_LEARNED) else []
        elif key != self.lg_store_namespaces():
            return []
        return [label for label in name.split(".") if label]

    def indexed_memory(self, key: str, memory_id: str) -> str | None:
        """The memory document an item indexes, named by ``memory_id``; erased with it.

        A LangGraph store item given a text to index is also a long-term memory (its
        ``memory`` field): the item's searchable copy, which goes when the item goes.
        """
        if key.startswith(self._k("langgraph", "item", "")):
            return self.longterm(memory_id)
        return None

    def is_secondary(self, key: str) -> bool:
        """Whether a key belongs to an item without being its :meth:`vector`.

        A passage hash, a belief's history, an entity's relation set: with the vector,
        every key :meth:`owner` names an item for.
        """
        prefix = self.vector_prefix()
        if key.startswith(prefix):
            return "#" in key[len(prefix) :]  # as document_of_vector reads it
        return self.owner(key) is not None

    def memory_document_prefixes(self) -> tuple[str, ...]:
        """Key prefixes of the memory documents (daily entries, long-term notes, beliefs)."""
        return (self.daily_entry(""), self.longterm(""), self.belief(""))

    def erasure_untouched(self) -> tuple[str, ...]:
        """Non-state keys an erasure redacts on its own terms, or leaves alone.

        The journal (rebuilt whole), locks and its own working keys, the erasure records,
        the checkpoint index.
        """
        return (
            self.journal(),
            self._k("lock", ""),
            self._k("tmp", "erase", ""),
            self.erasures(),
            self.checkpoints(),
        )

    def field_hashes(self) -> tuple[str, ...]:
        """Non-state hashes that are collections of fields (heartbeat, maintenance report)."""
        return (self.heartbeat_state(), self.daemon_maintenance())

    def tier(self, key: str) -> str:
        """The memory tier a state key belongs to (``other`` when unknown)."""
        rest = key[len(self.prefix) :] if self.owns(key) else key
        for family, tier in _TIERS:
            if rest.startswith(family):
                return tier
        return "other"


def named_parts(rest: str) -> list[str]:
    """:meth:`Keyspace.named_parts` of a key's name without its namespace (``chat:session:x``)."""
    if not rest.startswith(NAMED_FAMILIES) or rest in _FIXED_NAMES:
        return []  # most keys: one test
    for family, form in _NAMED_FAMILIES:
        if rest.startswith(family):
            named = rest[len(family) :]
            if form == _PLAIN:
                return [named] if named else []
            first, *others = named.split(":")
            if form == _THREAD:  # its checkpoint namespace, ids, channel: the graph's own
                return [unquote(first)] if first else []
            return [unquote(p) for p in (*first.split("."), *others) if p]
    return []


NAMED_FAMILIES: tuple[str, ...] = tuple(family for family, _ in _NAMED_FAMILIES)
"""The key families named by what the agent or its caller chose (:func:`named_parts`)."""


def _part(name: str) -> str:
    """A name taken from outside, percent-encoded to be one part of a key."""
    return quote(name, safe="")


def _passage(vector_key: str, n: int) -> str:
    """Passage ``n``'s hash, named after its memory's vector hash."""
    return f"{vector_key}#{n}"
