"""The agent's tools, and the policy, approvals and budgets they are called under.

Aether's operations, the archetype's workspace tools and other MCP servers' tools.
Why: docs/design.md, "Tools".
"""

from aether.runtime.tools.box import (
    ALWAYS_OFFERED,
    Handler,
    Tool,
    ToolArguments,
    Toolbox,
    ToolRun,
    builtin_tools,
    check_arguments,
    operation_tool,
)
from aether.runtime.tools.workspace import ToolOutput, Workspace

__all__ = [
    "ALWAYS_OFFERED",
    "Handler",
    "Tool",
    "ToolArguments",
    "ToolOutput",
    "ToolRun",
    "Toolbox",
    "Workspace",
    "builtin_tools",
    "check_arguments",
    "operation_tool",
]
