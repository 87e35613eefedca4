"""The dynamic system prompt, built at run time from the identity in Redis.

Sections, most important first: guardrails (never dropped), identity, current time,
operator, values, how the agent works, heartbeat instructions, operator notes. Over
budget, whole sections are dropped from the least important up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from aether.identity.bootstrap import USER_FILE
from aether.identity.profile import Identity
from aether.tokens import count_tokens


@dataclass(frozen=True)
class SystemPrompt:
    """A built system prompt and what went into it."""

    text: str
    tokens: int
    sections: list[str]
    dropped: list[str]
    over_budget: bool


def zone_named(name: str | None) -> ZoneInfo:
    """The time zone of that IANA name (UTC when unset or unknown)."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def operator_zone(identity: Identity) -> ZoneInfo:
    """The operator's time zone (UTC when unset or unknown)."""
    return zone_named(identity.user.get("timezone"))


def current_time_stamp(now: datetime, zone: ZoneInfo) -> str:
    """``[Current Time: YYYY-MM-DD HH:MM:SS]`` in the operator's time zone."""
    local = now.astimezone(zone)
    return f"[Current Time: {local:%Y-%m-%d %H:%M:%S}] ({zone.key})"


def _bullets(texts: list[str]) -> str:
    seen: list[str] = []
    for text in texts:
        for line in text.splitlines():
            if line.strip() and line.strip() not in seen:
                seen.append(line.strip())
    return "\n".join(seen)


def _operator_notes(body: str) -> str:
    """What the operator wrote in USER.md's body, for the model.

    Comments (the template's how-to) and a body of headings alone say nothing to it.
    """
    text = re.sub(r"<!--.*?-->", "", body, flags=re.DOTALL).strip()
    said = [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    return text if said else ""


def _sections(identity: Identity, now: datetime) -> list[tuple[str, str]]:
    """(name, text) in output order; empty sections left out."""
    docs = identity.docs()
    agent_docs = [d for d in docs if d.name != USER_FILE]
    user_doc = next((d for d in docs if d.name == USER_FILE), None)
    a, u = identity.agent, identity.user

    def section(name: str) -> list[str]:
        return [d.sections[name] for d in agent_docs if d.sections.get(name)]

    who = f"You are {a.get('name', 'an agent')}{' ' + a['emoji'] if a.get('emoji') else ''}."
    details = [
        f"Role: {a['role']}." if a.get("role") else "",
        f"Voice: {a['voice_style']}." if a.get("voice_style") else "",
        f"Autonomy mode: {a['autonomy_mode']}." if a.get("autonomy_mode") else "",
    ]
    operator = "\n".join(
        f"{label}: {u[key]}"
        for key, label in (
            ("name", "Name"),
            ("timezone", "Timezone"),
            ("projects", "Projects"),
            ("priorities", "Priorities"),
            ("preferences", "Preferences"),
        )
        if u.get(key)
    )
    notes = ""
    if user_doc is not None:
        body = user_doc.text.split("---", 2)[-1] if user_doc.fields else user_doc.text
        notes = _operator_notes(body)
    work = [
        text
        for d in agent_docs
        for name, text in d.sections.items()
        if name not in ("guardrails", "values", "heartbeat") and text
    ]
    candidates = [
        ("identity", " ".join([who, *[d for d in details if d]])),
        ("guardrails", _bullets(section("guardrails"))),
        ("current time", current_time_stamp(now, operator_zone(identity))),
        ("operator", operator),
        ("values", _bullets(section("values"))),
        ("how i work", "\n\n".join(work)),
        ("heartbeat", "\n\n".join(section("heartbeat"))),
        ("operator notes", notes),
    ]
    return [(name, text) for name, text in candidates if text]


# least important first: the order in which sections are dropped
_DROP_ORDER = [
    "operator notes",
    "heartbeat",
    "how i work",
    "values",
    "operator",
    "current time",
    "identity",
]


def _render(sections: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"# {name.title()}\n{text}" for name, text in sections)


def build_system_prompt(
    identity: Identity, max_tokens: int | None = None, now: datetime | None = None
) -> SystemPrompt:
    """Build the system prompt within ``max_tokens`` (never dropping the guardrails).

    Args:
        identity: the identity loaded from Redis.
        max_tokens: the budget; ``None`` = no limit.
        now: the current time (injected in tests).
    """
    sections = _sections(identity, now or datetime.now(UTC))
    dropped: list[str] = []
    text = _render(sections)
    if max_tokens is not None:
        for name in _DROP_ORDER:
            if count_tokens(text) <= max_tokens:
                break
            if any(n == name for n, _ in sections):
                sections = [(n, t) for n, t in sections if n != name]
                dropped.append(name)
                text = _render(sections)
    tokens = count_tokens(text)
    return SystemPrompt(
        text=text,
        tokens=tokens,
        sections=[n for n, _ in sections],
        dropped=dropped,
        over_budget=max_tokens is not None and tokens > max_tokens,
    )


__all__ = ["SystemPrompt", "build_system_prompt", "current_time_stamp", "operator_zone"]
