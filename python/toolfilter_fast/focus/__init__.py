"""The focus lens: the tools a UI session's agent sees, cut to what has its attention.

``lens`` is :class:`FocusLens` over the Rust core; ``registry`` the
thread-safe :class:`ToolRegistry` the meta-tool searches; ``common`` what the
lens and its reference share (the option checks, how a tool is read, the
meta-tool's definition and results).
"""

from __future__ import annotations

from .lens import FocusLens
from .registry import ToolRegistry

__all__ = ["FocusLens", "ToolRegistry"]
