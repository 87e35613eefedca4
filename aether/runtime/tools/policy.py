"""The operator's policy: may the agent call this tool, must it ask, or never?

Why: docs/design.md, "Tools". Three lists of globs over tool names
(``AETHER_TOOLS__ALLOW``, ``__ASK``, ``__DENY``) override the defaults of the agent's
``autonomy_mode``:

============  ==========================  ===========================  ===============
mode          memory tools and reads      file writes and ``bash``     MCP tools
============  ==========================  ===========================  ===============
supervised    allow                       ask                          ask
autonomous    allow                       allow                        allow
readonly      allow                       deny                         deny
============  ==========================  ===========================  ===============

Memory tools (aether's own operations) are journaled and reversible by a rollback,
reads change nothing; what touches the world outside memory cannot be rolled back, so
that is what a supervised agent asks about. An MCP tool is named ``SERVER__TOOL``; a tool
a program registers itself (``AgentRuntime.register_tool``) is the operator's own code
and is allowed in every mode, unless a glob says otherwise. The most specific matching glob wins: an
exact name over any glob, then the glob with more literal characters; at a tie, the
stricter decision (deny, then ask).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from aether.config import ToolSettings
from aether.errors import InvalidOperationError
from aether.identity.profile import AUTONOMY_MODES

__all__ = [
    "MODES",
    "READS",
    "WRITES",
    "AutonomyMode",
    "Decision",
    "Policy",
    "PolicyDecision",
    "autonomy_mode",
]

Decision = Literal["allow", "ask", "deny"]
AutonomyMode = Literal["supervised", "autonomous", "readonly"]
MODES: tuple[str, ...] = AUTONOMY_MODES
READS = frozenset({"read_file", "glob", "grep"})
WRITES = frozenset({"write_file", "edit_file", "bash"})
_STRICTNESS: dict[Decision, int] = {"allow": 0, "ask": 1, "deny": 2}
_WILDCARDS = set("*?[]")
MCP_SEPARATOR = "__"


@dataclass(frozen=True)
class PolicyDecision:
    """What the policy says about one tool, and which rule said it."""

    decision: Decision
    rule: str


def autonomy_mode(value: str | None) -> AutonomyMode:
    """The profile's ``autonomy_mode`` (unset: ``supervised``).

    Raises:
        InvalidOperationError: a value that is none of the modes.
    """
    mode = (value or "supervised").strip().lower()
    if mode not in MODES:
        raise InvalidOperationError(f"autonomy_mode {value!r}: use one of {', '.join(MODES)}")
    return mode  # type: ignore[return-value]


class Policy:
    """Allow, ask or deny per tool.

    Args:
        settings: the operator's globs.
        mode: the agent profile's autonomy mode.
        memory_tools: the names of aether's own (journaled) tools.
    """

    def __init__(self, settings: ToolSettings, mode: AutonomyMode, memory_tools: Iterable[str]):
        self.mode = mode
        self.memory_tools = frozenset(memory_tools)
        self.rules: list[tuple[str, Decision]] = [
            (pattern, decision)
            for decision in ("allow", "ask", "deny")
            for pattern in settings.patterns(decision)
        ]

    def decide(self, tool: str) -> PolicyDecision:
        """The decision for ``tool`` (see the module docs)."""
        matches = [(p, d) for p, d in self.rules if fnmatch.fnmatchcase(tool, p)]
        if matches:
            pattern, decision = max(matches, key=lambda m: (_specificity(m[0]), _STRICTNESS[m[1]]))
            return PolicyDecision(decision, f"AETHER_TOOLS__{decision.upper()} {pattern!r}")
        return PolicyDecision(self.default(tool), f"autonomy mode {self.mode}")

    def default(self, tool: str) -> Decision:
        """The autonomy mode's decision for ``tool``."""
        acts = tool in WRITES or MCP_SEPARATOR in tool
        if self.mode == "autonomous" or tool in self.memory_tools or not acts:
            return "allow"
        return "deny" if self.mode == "readonly" else "ask"


def _specificity(pattern: str) -> float:
    """An exact name beats any glob; a glob with more literal characters beats fewer."""
    if not _WILDCARDS & set(pattern):
        return float("inf")
    return float(sum(1 for c in pattern if c not in _WILDCARDS))
