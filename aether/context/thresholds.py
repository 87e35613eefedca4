"""The threshold system on context usage (used tokens / the model's window).

``proactive`` (60 %): a silent checkpoint. ``warning`` (75 %): one injected system
message. ``critical`` (85 %): checkpoint, forced compression, warnings reset. Each fires
once per upward crossing: a level re-arms when usage falls back well below it (by
``rearm_margin``, so that usage wobbling around a level, as the memories section of each
request varies, does not fire it again), and compression re-arms them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from aether.config import ContextSettings

PROACTIVE = "proactive"
WARNING = "warning"
CRITICAL = "critical"
WARNING_TEXT = "Context at 75%, wrap up or checkpoint"


@dataclass(frozen=True)
class Thresholds:
    """The three levels, as fractions of the window."""

    proactive: float = 0.60
    warning: float = 0.75
    critical: float = 0.85
    rearm_margin: float = 0.10

    @classmethod
    def from_settings(cls, settings: ContextSettings) -> Thresholds:
        """The configured levels."""
        return cls(
            settings.proactive_at, settings.warning_at, settings.critical_at, settings.rearm_margin
        )

    def level(self, name: str) -> float:
        """The fraction of a level by name."""
        return {PROACTIVE: self.proactive, WARNING: self.warning, CRITICAL: self.critical}[name]

    def due(self, usage: float, fired: set[str]) -> tuple[list[str], set[str]]:
        """The actions due at ``usage``, and the fired set once they are taken.

        ``critical`` comes alone (its compression resets the others); ``proactive`` and
        ``warning`` fire when first crossed and re-arm below their level less the margin.
        """
        armed = {
            name
            for name in fired
            if name != CRITICAL and usage >= self.level(name) - self.rearm_margin
        }
        if usage >= self.critical:
            return [CRITICAL], set()
        actions = [
            name for name in (PROACTIVE, WARNING) if usage >= self.level(name) and name not in armed
        ]
        return actions, armed | set(actions)
