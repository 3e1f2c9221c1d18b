"""Where pickles written before the ``reference`` package find its GroupFilter.

A reference ``GroupFilter`` pickled by those releases names this module;
pickles made now name ``toolfilter_fast.reference``. Nothing in the package
imports this one.
"""

from __future__ import annotations

from .reference.groups import GroupFilter

__all__ = ["GroupFilter"]
