"""The LLM client: any OpenAI-compatible chat endpoint through the ``openai`` package.

Configured by ``AETHER_LLM__BASE_URL``, ``AETHER_LLM__MODEL`` and ``AETHER_LLM__API_KEY``
(``AETHER_LLM__TIMEOUT_S``, ``AETHER_LLM__MAX_RETRIES``). Timeouts and retries are the
openai client's own: connection errors, 408, 409, 429 and 5xx are retried with
exponential backoff and jitter; what still fails becomes an :class:`LLMError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog

from aether.config import Settings
from aether.errors import LLMError, LLMNotConfiguredError
from aether.ids import new_id
from aether.messages import ChatMessage, FunctionCall, ToolCallPart, ToolSchema

if TYPE_CHECKING:  # the SDK is imported by the first client made (a CLI read needs none)
    from openai import AsyncOpenAI

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for."""

    id: str
    name: str
    arguments: str
    call: str = field(default_factory=new_id)
    """aether's own id of this call (the model's ``id`` may repeat)."""

    def as_message_part(self) -> ToolCallPart:
        """The call as it appears in an assistant message (with aether's ``call`` id)."""
        return ToolCallPart(
            id=self.id,
            type="function",
            function=FunctionCall(name=self.name, arguments=self.arguments),
            call=self.call,
        )


@dataclass(frozen=True)
class Completion:
    """What the model answered."""

    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = ""


@dataclass
class CircuitBreaker:
    """Fails calls at once while an endpoint keeps failing, so callers learn it quickly.

    After ``failures`` failed calls in a row (each after its own retries), or at once
    when the endpoint refused the connection, the breaker opens: for ``cooldown_s``
    every call fails at once with the last error; then one call is let through, and a
    success closes it again.
    """

    url: str
    failures: int = 3
    cooldown_s: float = 30.0
    clock: Callable[[], float] = time.time
    in_a_row: int = 0
    failing_since: float | None = None
    last_error: str | None = None
    open_until: float | None = None

    def is_open(self) -> bool:
        """Whether calls fail at once now (a retry before the cool-down is pointless)."""
        return self.open_until is not None and self.clock() < self.open_until

    def check(self) -> None:
        """Raise at once while the breaker is open."""
        if self.open_until is not None and self.clock() < self.open_until:
            raise LLMError(
                f"LLM endpoint {self.url} is failing ({self.in_a_row} calls in a row; last: "
                f"{self.last_error}); calls fail at once for {self.cooldown_s:g} s, then "
                "it is tried again"
            )

    def failed(self, error: str, *, at_once: bool = False) -> None:
        """One more failed call; ``at_once``: nothing listens there, open now."""
        self.in_a_row += 1
        self.last_error = error
        if self.failing_since is None:
            self.failing_since = self.clock()
        if at_once or self.in_a_row >= self.failures:
            self.open_until = self.clock() + self.cooldown_s

    def succeeded(self) -> None:
        """A call went through: close the breaker."""
        self.in_a_row = 0
        self.failing_since = self.last_error = self.open_until = None


def _refused(error: BaseException) -> bool:
    """Whether the endpoint refused the connection (nothing listens at that address)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError) or "refused" in str(seen).lower():
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class LLMClient:
    """Chat completions against one endpoint and model, behind a circuit breaker.

    Args:
        base_url: the OpenAI-compatible endpoint (``http://host/v1``).
        model: the model name.
        api_key: the key (endpoints that need none get a placeholder).
        timeout_s: per request.
        max_retries: retries with exponential backoff.
        breaker: fails calls at once while the endpoint keeps failing (default: 3 in a
            row open it for 30 s).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.breaker = breaker or CircuitBreaker(base_url)
        from openai import AsyncOpenAI

        self.client: AsyncOpenAI = AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            timeout=timeout_s,
            max_retries=max_retries,
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> LLMClient | None:
        """The configured client, or ``None`` when no LLM is configured."""
        if not settings.llm.base_url or not settings.llm.model:
            return None
        key = settings.llm.api_key.get_secret_value() if settings.llm.api_key else None
        breaker = CircuitBreaker(
            settings.llm.base_url,
            settings.llm.breaker_failures,
            settings.llm.breaker_cooldown_s,
        )
        return cls(
            settings.llm.base_url,
            settings.llm.model,
            key,
            settings.llm.timeout_s,
            settings.llm.max_retries,
            breaker,
        )

    @classmethod
    def for_judging(cls, settings: Settings) -> LLMClient | None:
        """The client that judges search's results, when ``memory.rerank`` is ``llm``.

        Raises:
            LLMNotConfiguredError: reranking by the LLM is asked for and none is configured.
        """
        if settings.memory.rerank != "llm":
            return None
        return cls.require(cls.from_settings(settings))

    @staticmethod
    def require(client: LLMClient | None) -> LLMClient:
        """``client``, or a clear error when no LLM is configured."""
        if client is None:
            raise LLMNotConfiguredError(
                "no LLM configured: set AETHER_LLM__BASE_URL and AETHER_LLM__MODEL "
                "(and AETHER_LLM__API_KEY when the endpoint needs one)"
            )
        return client

    async def chat(
        self,
        messages: list[ChatMessage],
        tools: list[ToolSchema] | None = None,
        max_tokens: int | None = None,
        response_format: dict[str, object] | None = None,
    ) -> Completion:
        """One chat completion.

        Raises:
            LLMError: the endpoint failed after its retries, sent no choice, or keeps
                failing (the breaker is open: the call fails at once, not retryable).
        """
        self.breaker.check()
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        if max_tokens:
            kwargs["max_tokens"] = max_tokens
        if response_format:
            kwargs["response_format"] = response_format
        url = self.base_url
        import openai

        try:
            response = await self.client.chat.completions.create(**kwargs)
        except openai.APIStatusError as e:
            retryable = e.status_code in (408, 409, 429) or e.status_code >= 500
            error = LLMError(f"LLM endpoint {url} answered {e.status_code}: {_brief(e)}", retryable)
            if retryable:
                self.breaker.failed(str(error))
            raise error from e
        except (openai.APIConnectionError, openai.APITimeoutError) as e:
            # a refused connection will be refused again: the next calls fail at once
            self.breaker.failed(f"unreachable: {_brief(e)}", at_once=_refused(e))
            raise LLMError(f"LLM endpoint {url} unreachable: {_brief(e)}", retryable=True) from e
        except openai.OpenAIError as e:
            raise LLMError(f"LLM request to {url} failed: {_brief(e)}") from e
        self.breaker.succeeded()
        if not response.choices:
            raise LLMError("LLM endpoint sent no choices", retryable=True)
        choice = response.choices[0]
        calls = [
            ToolCall(c.id, c.function.name, c.function.arguments or "{}")
            for c in choice.message.tool_calls or []
            if c.type == "function"
        ]
        usage = response.usage
        return Completion(
            content=choice.message.content or "",
            tool_calls=calls,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            finish_reason=choice.finish_reason or "",
        )

    async def complete(self, system: str, prompt: str, max_tokens: int | None = None) -> str:
        """A plain text answer to one prompt (summaries, extraction)."""
        messages = [
            ChatMessage(role="system", content=system),
            ChatMessage(role="user", content=prompt),
        ]
        reply = await self.chat(messages, max_tokens=max_tokens)
        if not reply.content.strip():
            raise LLMError("LLM answered with empty text", retryable=True)
        return reply.content

    async def complete_json(
        self, system: str, prompt: str, schema: dict[str, object], max_tokens: int | None = None
    ) -> str:
        """A JSON answer following ``schema`` (the API's structured output)."""
        messages = [
            ChatMessage(role="system", content=system),
            ChatMessage(role="user", content=prompt),
        ]
        response_format: dict[str, object] = {
            "type": "json_schema",
            "json_schema": {"name": "extraction", "schema": schema, "strict": False},
        }
        reply = await self.chat(messages, max_tokens=max_tokens, response_format=response_format)
        if not reply.content.strip():
            raise LLMError("LLM answered with empty text", retryable=True)
        return reply.content

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self.client.close()


def _brief(error: Exception) -> str:
    text = str(error)
    return text if len(text) <= 300 else text[:300] + "…"


def parse_arguments(raw: str) -> dict[str, object]:
    """A tool call's JSON arguments as an object.

    Raises:
        LLMError: not JSON, or not a JSON object.
    """
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as e:
        raise LLMError(f"tool arguments are not valid JSON: {e.msg}") from e
    if not isinstance(value, dict):
        raise LLMError("tool arguments must be a JSON object")
    return value
