"""The specification made executable: the pure-Python oracles of the fast path.

The same public API as ``toolfilter_fast`` for the filter (``filter``), the
tool groups (``groups``) and the focus lens (``focus``), each written out
plainly and never calling the Rust core; ``text`` is how all three read a
string. The property tests compare the fast path to these, and the
benchmarks use them as a baseline. ``Tool``, the exceptions, the pattern
classification (with the ``Annotations`` and ``Cel`` entries, which are plain
data), the group model and the catalog are shared with the fast path;
``expressions`` matches annotation patterns and runs CEL (with
its own evaluator, ``cel``).
"""

from __future__ import annotations

from .._errors import PatternError, ToolNotFoundError
from .._tool import Tool
from ..filter.catalog import ToolCatalog
from ..filter.entries import Annotations, Cel
from .filter import ToolFilter, compile, fold_loose, fold_lower, glob_match, split_pattern
from .filter import _rebuild as _rebuild
from .focus import FocusLens, ToolRegistry
from .groups import (
    GroupConfigError,
    GroupConfigWarning,
    GroupFilter,
    GroupMode,
    ToolFilterGroup,
    group_glob_match,
)
from .policy import Policy

__all__ = [
    "Annotations",
    "Cel",
    "FocusLens",
    "GroupConfigError",
    "GroupConfigWarning",
    "GroupFilter",
    "GroupMode",
    "PatternError",
    "Policy",
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
    "group_glob_match",
    "split_pattern",
]

# Pickles name a class (or a rebuild function) by its module: the reference
# filters keep naming this package, which every release has had.
ToolFilter.__module__ = _rebuild.__module__ = GroupFilter.__module__ = __name__
