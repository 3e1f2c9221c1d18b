"""The tool filter: include/exclude patterns over ``(server_id, tool_name)``.

``tool_filter`` compiles them over the Rust core; ``patterns`` classifies the
entries of an option (shared with the reference); ``explain`` replays one
decision step by step; ``catalog`` holds servers' tools and hides on every path.
"""

from __future__ import annotations

from .catalog import ToolCatalog
from .explain import Decision
from .tool_filter import PICKLE_FORMAT, ToolFilter, compile
from .tool_filter import _rebuild as _rebuild

__all__ = ["PICKLE_FORMAT", "Decision", "ToolCatalog", "ToolFilter", "compile"]

# A pickled ToolFilter names its class and `_rebuild` by module, and releases
# before this package was split read `toolfilter_fast.filter`: both keep that
# name, so that pickles travel between those releases and this one both ways.
ToolFilter.__module__ = _rebuild.__module__ = __name__
