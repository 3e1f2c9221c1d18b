"""How the pure-Python references read and compare strings.

By value: a ``str`` subclass may override ``__eq__``, ``__iter__``,
``__contains__``, ``split`` and the rest; the fast path reads a string's
characters and never calls them. So the references turn every name, pattern
and keyword into an exact ``str`` before looking at it. The folds and the
segment glob are here too, for the filter and its annotation patterns.
"""

from __future__ import annotations

__all__ = ["fold_loose", "fold_lower", "glob_match", "text_of"]


def text_of(s: str) -> str:
    """The characters of ``s`` as an exact ``str`` (the base method, called
    directly, copies a subclass's value and ignores its overrides)."""
    return str.__str__(s)


def fold_lower(s: str) -> str:
    """Each character on its own to its Unicode lower-case (no final-sigma rule)."""
    return "".join(c.lower() for c in text_of(s))


def fold_loose(s: str) -> str:
    """``fold_lower``, then ``-`` and ``.`` to ``_``."""
    return fold_lower(s).replace("-", "_").replace(".", "_")


def glob_match(pattern: str, text: str) -> bool:
    """Anchored match where ``*`` is any run of characters and all else is literal.

    ``reach[j]`` says whether the pattern read so far can match ``text[:j]``.
    """
    pattern, text = text_of(pattern), text_of(text)
    reach = [True] + [False] * len(text)
    for p in pattern:
        if p == "*":
            seen = False
            for j in range(len(reach)):
                seen = seen or reach[j]
                reach[j] = seen
        else:
            reach = [False] + [reach[j] and text[j] == p for j in range(len(text))]
    return reach[-1]
