"""How the pure-Python references read a string: by its value.

A ``str`` subclass may override ``__eq__``, ``__iter__``, ``__contains__``,
``split`` and the rest; the fast path reads a string's characters and never
calls them. So the references turn every name, pattern and keyword into an
exact ``str`` before looking at it.
"""

from __future__ import annotations

__all__ = ["text_of"]


def text_of(s: str) -> str:
    """The characters of ``s`` as an exact ``str`` (the base method, called
    directly, copies a subclass's value and ignores its overrides)."""
    return str.__str__(s)
