"""Tool filter groups: keyword-activated allow-lists over MCP ``server__tool`` names.

``model`` is what a group is (its fields, how it is read from dicts, JSON and
a runtime's TOML config), shared with the reference; ``group_filter`` is the
:class:`GroupFilter` that matches the groups in the Rust core.
"""

from __future__ import annotations

from .group_filter import GroupFilter, group_glob_match
from .model import GroupConfigError, GroupConfigWarning, GroupMode, ToolFilterGroup, flat_name

__all__ = [
    "GroupConfigError",
    "GroupConfigWarning",
    "GroupFilter",
    "GroupMode",
    "ToolFilterGroup",
    "flat_name",
    "group_glob_match",
]

# Pickles name a class by its module: these keep naming this package (which
# every release has had), not the module that defines them.
GroupFilter.__module__ = ToolFilterGroup.__module__ = GroupMode.__module__ = __name__
