"""toolfilter_fast: which MCP tools may an application and its LLM see?

Include/exclude patterns over ``(server_id, tool_name)`` with a Rust core,
a catalog that hides on every path, and a pure-Python ``reference``.
"""

from __future__ import annotations

from ._core import fold_loose, fold_lower, glob_match
from ._errors import PatternError, ToolNotFoundError
from ._tool import Tool
from .catalog import ToolCatalog
from .filter import ToolFilter, compile
from .groups import GroupConfigError, GroupConfigWarning, GroupFilter, GroupMode, ToolFilterGroup

__all__ = [
    "GroupConfigError",
    "GroupConfigWarning",
    "GroupFilter",
    "GroupMode",
    "PatternError",
    "Tool",
    "ToolCatalog",
    "ToolFilter",
    "ToolFilterGroup",
    "ToolNotFoundError",
    "compile",
    "fold_loose",
    "fold_lower",
    "glob_match",
]

__version__ = "0.1.0"
