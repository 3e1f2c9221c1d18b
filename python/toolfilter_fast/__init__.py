"""toolfilter_fast: which MCP tools may an application and its LLM see?

Include/exclude patterns over ``(server_id, tool_name)`` with a Rust core,
a catalog that hides on every path, and a pure-Python ``reference``.
"""

from __future__ import annotations

from ._core import fold_loose, fold_lower, glob_match
from ._errors import PatternError, ToolNotFoundError
from ._tool import Tool
from ._version import __version__ as __version__
from .config import ConfigError
from .filter import Decision, ToolCatalog, ToolFilter, compile
from .filter.entries import Annotations, Cel
from .focus import FocusLens, ToolRegistry
from .groups import GroupConfigError, GroupConfigWarning, GroupFilter, GroupMode, ToolFilterGroup
from .policy import Dropped, Focus, Policy, PolicyDecision, Selection

__all__ = [
    "Annotations",
    "Cel",
    "ConfigError",
    "Decision",
    "Dropped",
    "Focus",
    "FocusLens",
    "GroupConfigError",
    "GroupConfigWarning",
    "GroupFilter",
    "GroupMode",
    "PatternError",
    "Policy",
    "PolicyDecision",
    "Selection",
    "Tool",
    "ToolCatalog",
    "ToolFilter",
    "ToolFilterGroup",
    "ToolNotFoundError",
    "ToolRegistry",
    "compile",
    "fold_loose",
    "fold_lower",
    "glob_match",
]
