"""Name patterns, the globs of MCP's list filters, written out plainly.

``*`` is any run of characters (none too), ``?`` exactly one character (a
code point: a lone surrogate is one), and every other character is itself,
compared exactly. A set matches a name when any of its patterns does. The
fast path is ``toolfilter_fast._core.NamePatterns``; the list filter of the
gateway and of the MCP server adapter uses it.
"""

from __future__ import annotations

from collections.abc import Iterable

from .text import text_of

__all__ = ["NamePatterns", "name_pattern_match"]


def name_pattern_match(pattern: str, name: str) -> bool:
    """Whether ``pattern`` matches the whole of ``name``.

    ``reach[j]`` says whether the pattern read so far can match ``name[:j]``.
    """
    pattern, name = text_of(pattern), text_of(name)
    reach = [True] + [False] * len(name)
    for p in pattern:
        if p == "*":
            for j in range(1, len(name) + 1):
                reach[j] = reach[j] or reach[j - 1]
        else:
            reach = [False] + [reach[j - 1] and (p == "?" or name[j - 1] == p)
                               for j in range(1, len(name) + 1)]
    return reach[len(name)]


class NamePatterns:
    """The patterns of one filter field: a name matches when any does."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns: list[str] = []
        for i, pattern in enumerate(patterns):
            if not isinstance(pattern, str):
                raise TypeError(f"patterns[{i}] must be str, not {type(pattern).__name__}")
            self.patterns.append(text_of(pattern))

    def __len__(self) -> int:
        return len(self.patterns)

    def is_match(self, name: str) -> bool:
        if not isinstance(name, str):
            raise TypeError(f"name must be str, not {type(name).__name__}")
        return any(name_pattern_match(pattern, name) for pattern in self.patterns)

    def matches(self, names: Iterable[str]) -> list[bool]:
        out = []
        for i, name in enumerate(names):
            if not isinstance(name, str):
                raise TypeError(f"names[{i}] must be str, not {type(name).__name__}")
            out.append(self.is_match(name))
        return out
