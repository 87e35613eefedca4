"""The operator console: see and steer the running agent in a browser (``aether console``).

Why: docs/design.md, "The operator console".
"""

from aether.interfaces.console.app import build_app
from aether.interfaces.console.auth import console_token, is_loopback

__all__ = ["build_app", "console_token", "is_loopback"]
