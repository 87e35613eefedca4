"""aether: a Redis Stack-native memory runtime for long-running autonomous AI agents."""

__version__ = "0.1.0"
