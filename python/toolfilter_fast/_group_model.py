"""Where pickles written before the ``groups`` package find a tool group.

Those releases defined ``ToolFilterGroup`` and ``GroupMode`` here, and a
pickled ``GroupFilter`` or ``ToolFilterGroup`` names this module; pickles made
now name ``toolfilter_fast.groups``. Nothing in the package imports this one.
"""

from __future__ import annotations

from .groups.model import GroupMode, ToolFilterGroup

__all__ = ["GroupMode", "ToolFilterGroup"]
