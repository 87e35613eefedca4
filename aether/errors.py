"""The AetherError hierarchy: every error aether raises on purpose derives from AetherError.

Interfaces catch AetherError and print its message as one line; anything else is a bug
or a driver's error: its traceback goes to the log file and the user sees
:func:`describe`'s one line.
"""

import redis


class AetherError(Exception):
    """Base of every error aether raises deliberately."""


class ConfigError(AetherError):
    """The configuration is invalid or inconsistent."""


class ServerError(AetherError):
    """The embedded Redis server could not be found, started or stopped."""


class IncompatibleServerError(AetherError):
    """The Redis server is too old or lacks the search and JSON modules."""


class StoreError(AetherError):
    """A journaled state operation was refused or failed."""


class InvalidOperationError(StoreError):
    """A state operation is malformed (unknown command, key outside the namespace...)."""


class ConflictError(InvalidOperationError):
    """A write that must create a key found it already there (nothing was changed)."""


class BusyError(StoreError, redis.ResponseError):
    """Redis is busy or a rollback holds writes back; nothing changed, try again.

    Also a ``redis.ResponseError``, so code written against redis-py still catches it.
    """


class PoolExhaustedError(BusyError):
    """Every connection of this process's Redis pool stayed in use past the pool timeout.

    Redis itself may be fine: too many calls ran at once in this process. Raise
    ``AETHER_REDIS_POOL_SIZE`` or ``AETHER_REDIS_POOL_TIMEOUT_S``, or run fewer at once.
    """


class CapacityError(StoreError, redis.ResponseError):
    """Redis refused a write because it is out of memory (``maxmemory``); nothing changed."""


class RefusedError(StoreError, redis.ResponseError):
    """Redis refused a command (wrong type, bad argument...): a bug or bad data."""


class UnavailableError(AetherError, redis.ConnectionError):
    """Redis cannot be reached (down, restarting, timing out); try again later.

    Also a ``redis.ConnectionError``, so redis-py's retry and outage handling apply.
    """


class NotFoundError(AetherError):
    """An ID or key does not exist."""


class AmbiguousIdError(AetherError):
    """An ID prefix matches more than one object."""


class CheckpointError(AetherError):
    """A checkpoint, rollback or undo could not be carried out."""


class ConcurrentAdminError(CheckpointError):
    """Another admin action (rollback, undo, restore) holds the admin lock."""


class ArchiveError(AetherError):
    """The PostgreSQL archive is unavailable or inconsistent."""


class IdentityError(AetherError):
    """An identity file or field is invalid, or the identity is missing."""


class LLMError(AetherError):
    """The LLM endpoint failed (after its retries) or answered something unusable.

    Attributes:
        retryable: whether trying again later may succeed (timeouts, 429, 5xx).
    """

    def __init__(self, message: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class ToolUnavailableError(AetherError):
    """A tool's server (an MCP server the agent uses) is down or restarting; try later."""


class LLMNotConfiguredError(LLMError):
    """No LLM is configured (``AETHER_LLM__BASE_URL`` and ``AETHER_LLM__MODEL``)."""


# what "Redis is away" looks like from redis-py (BusyLoadingError is a ConnectionError)
REDIS_OUTAGE: tuple[type[BaseException], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    ConnectionError,
)


def describe(error: BaseException) -> str:
    """One line for an error that is not an AetherError (a bug, or a driver's error)."""
    if isinstance(error, AetherError):
        return str(error)
    if isinstance(error, redis.ConnectionError | redis.TimeoutError):
        return f"Redis is unreachable: {error}"
    if isinstance(error, redis.RedisError):
        return f"Redis refused the request: {error}"
    text = " ".join(str(error).split())[:300]
    return f"unexpected {type(error).__name__}{': ' + text if text else ''}"


def error_code(error: BaseException) -> tuple[str, bool]:
    """The stable code of an error and whether trying again may succeed.

    One table for every interface: the CLI's ``{"error": {"code", "message"}}`` and MCP's
    ``{"code", "message", "retryable"}``. Codes: ``busy`` (another admin action, a
    rollback holding writes, or Redis busy; retryable),
    ``ambiguous``, ``not_found``, ``invalid``, ``checkpoint``, ``identity``, ``llm``,
    ``config``, ``server``, ``archive``, ``unavailable`` (Redis unreachable; retryable),
    ``capacity`` (Redis out of memory),
    ``error`` (anything else).
    """
    table: list[tuple[type[BaseException] | tuple[type[BaseException], ...], str, bool]] = [
        ((ConcurrentAdminError, BusyError), "busy", True),
        ((UnavailableError, ToolUnavailableError), "unavailable", True),
        (CapacityError, "capacity", False),
        (AmbiguousIdError, "ambiguous", False),
        (NotFoundError, "not_found", False),
        (InvalidOperationError, "invalid", False),
        (CheckpointError, "checkpoint", False),
        (IdentityError, "identity", False),
        (LLMError, "llm", False),
        (ConfigError, "config", False),
        ((ServerError, IncompatibleServerError), "server", False),
        (ArchiveError, "archive", False),
        ((redis.ConnectionError, redis.TimeoutError), "unavailable", True),
    ]
    for kinds, code, retryable in table:
        if isinstance(error, kinds):
            if isinstance(error, LLMError):
                retryable = error.retryable
            return code, retryable
    return "error", False


class ErasureStuckError(CheckpointError):
    """An erasure cut short cannot be finished without the operator (its key is gone)."""
