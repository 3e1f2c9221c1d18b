"""The specification made executable: a pure-Python ToolFilter.

Simple and obviously right, with the same public API as the fast path. It is
the oracle of the property tests and the baseline of the benchmarks. Nothing
here calls the Rust core. ``Tool``, the exceptions, the pattern classification
(``filter/patterns.py``) and the filter-agnostic ``ToolCatalog`` are shared with the
fast path; the matching and the string-pattern rules are written out again
here, independently.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

from .._errors import PatternError
from .._tool import Tool
from ..filter.patterns import (
    AnnotationPattern,
    CelPattern,
    FunctionPattern,
    Parsed,
    RegexPattern,
    StringPattern,
    call_fail_closed,
    parse_options,
)
from .expressions import CelExpression, CelFailure, annotations_match
from .text import fold_loose, fold_lower, glob_match, text_of

__all__ = ["ToolFilter", "compile", "fold_loose", "fold_lower", "glob_match", "split_pattern"]


def split_pattern(pattern: str) -> tuple[str, str]:
    """``"server/tool"`` split at the first ``/``; a bare tool means server ``*``.

    Raises ValueError with the reason for an unusable pattern.
    """
    pattern = text_of(pattern)
    if pattern == "":
        raise ValueError("empty pattern")
    if "/" not in pattern:
        return "*", pattern
    server, tool = pattern.split("/", 1)
    if server == "":
        raise ValueError("empty server segment")
    if ":" in server:
        raise ValueError("server segment contains ':'")
    if tool == "":
        raise ValueError("empty tool segment")
    return server, tool


class _Side:
    def __init__(self, option: str, parsed: list[Parsed], source: Sequence[Any]) -> None:
        self.loose = option == "exclude"
        self.sources = tuple(source)
        self.patterns = parsed
        self.globs: list[tuple[str, str]] = []
        for p in parsed:
            if isinstance(p, StringPattern):
                try:
                    self.globs.append(split_pattern(p.text))
                except ValueError as err:
                    raise PatternError(
                        f"{option}[{p.index}]: {err}: {p.text!r}", option=option,
                        index=p.index, entry=p.text,
                    ) from None
        self.regexes = [p for p in parsed if isinstance(p, RegexPattern)]
        self.annotations = [p.entry for p in parsed if isinstance(p, AnnotationPattern)]
        # Expressions that read ctx are called as functions, in their place
        # among them; the others are static.
        self.fns: list[Any] = []
        self.expressions: list[CelExpression] = []
        for p in parsed:
            if isinstance(p, FunctionPattern):
                self.fns.append(p.fn)
            elif isinstance(p, CelPattern):
                expression = CelExpression(option, p.index, p.entry)
                (self.fns if expression.dynamic else self.expressions).append(expression)

    def _segment(self, glob: str, text: str) -> bool:
        if self.loose:
            return glob_match(fold_loose(glob), fold_loose(text))
        return glob_match(glob, text)

    def static_match(self, tool: Any, server_id: str, name: str) -> bool:
        for server_glob, tool_glob in self.globs:
            if self._segment(server_glob, server_id) and self._segment(tool_glob, name):
                return True
        for entry in self.annotations:
            if annotations_match(entry, tool, server_id):
                return True
        for expression in self.expressions:
            try:
                if expression.verdict(tool, server_id, name, None):
                    return True
            except CelFailure:
                if self.loose:
                    return True  # fails closed: an exclude hides
        for p in self.regexes:
            if not self._segment(text_of(p.server_glob), server_id):
                continue
            if p.regex.search(name):
                return True
            if self.loose and p.regex.search(fold_loose(name)):
                return True
        return False


def _check_str(tool: Any) -> tuple[str, str]:
    """A tool's ``(server_id, name)`` as exact strings, or the TypeError that says
    what is wrong: no such attribute (or an unset slot), or not a ``str``."""
    try:
        server_id, name = tool.server_id, tool.name
    except AttributeError:
        raise TypeError(
            f"expected a Tool (an object with server_id and name), got {type(tool).__name__}"
        ) from None
    for what, value in (("server_id", server_id), ("name", name)):
        if not isinstance(value, str):
            raise TypeError(f"{what} must be str, not {type(value).__name__}")
    return text_of(server_id), text_of(name)


def check_threads(threads: Any) -> None:
    """``threads`` is None (every core) or an int from 1 to ``sys.maxsize``."""
    if threads is None:
        return
    if isinstance(threads, bool) or not isinstance(threads, int):
        raise TypeError(f"threads must be None or an int, not {type(threads).__name__}")
    if not 1 <= threads <= sys.maxsize:
        raise ValueError(
            f"threads must be None (every core) or an int from 1 to sys.maxsize, not {threads!r}"
        )


def _check_item(tool: Any, index: int) -> None:
    """A batch's TypeError for a tool that is none: the scalar one, with its place."""
    try:
        _check_str(tool)
    except TypeError as err:
        message = str(err)
        place = f"tools[{index}]"
        raise TypeError(
            f"{place}.{message}" if message.startswith(("server_id ", "name ")) else
            f"{place}: {message}"
        ) from None


def _pair_strings(pair: Any, index: int) -> tuple[str, str]:
    """The two strings of ``pairs[index]``, read from the tuple's own storage."""
    if not isinstance(pair, tuple) or tuple.__len__(pair) != 2:
        raise TypeError(f"pairs[{index}] must be a (server_id, name) tuple")
    for slot in (0, 1):
        value = tuple.__getitem__(pair, slot)
        if not isinstance(value, str):
            raise TypeError(f"pairs[{index}][{slot}] must be str, not {type(value).__name__}")
    return tuple.__getitem__(pair, 0), tuple.__getitem__(pair, 1)


class ToolFilter:
    """Reference ToolFilter: same API and semantics as ``toolfilter_fast.ToolFilter``."""

    _include: _Side
    _exclude: _Side

    def __init__(self) -> None:
        raise TypeError("use ToolFilter.compile(include=[...], exclude=[...])")

    @classmethod
    def compile(
        cls, *, include: Sequence[Any] = (), exclude: Sequence[Any] = (), **options: Any,
    ) -> ToolFilter:
        parsed = parse_options({"include": include, "exclude": exclude, **options})
        self = object.__new__(cls)
        self._include = _Side("include", parsed["include"], include)
        self._exclude = _Side("exclude", parsed["exclude"], exclude)
        return self

    @property
    def include(self) -> tuple[Any, ...]:
        return self._include.sources

    @property
    def dynamic(self) -> bool:
        return bool(self._include.fns or self._exclude.fns)

    @property
    def exclude(self) -> tuple[Any, ...]:
        return self._exclude.sources

    def static_visible(self, tool: Any) -> bool:
        server_id, name = _check_str(tool)
        if self._exclude.static_match(tool, server_id, name):
            return False
        if not self._include.patterns or self._include.fns:
            return True
        return self._include.static_match(tool, server_id, name)

    def visible(self, tool: Any, ctx: Any = None) -> bool:
        server_id, name = _check_str(tool)
        if self._exclude.static_match(tool, server_id, name):
            return False
        included = not self._include.patterns or self._include.static_match(tool, server_id, name)
        if not included and not self._include.fns:
            return False  # the static patterns decided: no function is called
        for fn in self._exclude.fns:
            if call_fail_closed(fn, tool, ctx) is not False:
                return False
        if included:
            return True
        for fn in self._include.fns:
            if call_fail_closed(fn, tool, ctx) is True:
                return True
        return False

    # A batch decides each item as the scalar call does; its errors name the
    # item's place, and every item is checked before any function is called.

    def static_mask(self, tools: Iterable[Any], *, indices: bool = False,
                    threads: int | None = None) -> list[Any]:
        check_threads(threads)
        tools = list(tools)
        for index, tool in enumerate(tools):
            _check_item(tool, index)
        return _as(indices, [self.static_visible(tool) for tool in tools])

    def mask(self, tools: Iterable[Any], ctx: Any = None, *, indices: bool = False,
             threads: int | None = None) -> list[Any]:
        check_threads(threads)
        tools = list(tools)
        for index, tool in enumerate(tools):
            _check_item(tool, index)
        return _as(indices, [self.visible(tool, ctx) for tool in tools])

    def static_filter(self, tools: Iterable[Any], *, threads: int | None = None) -> list[Any]:
        tools = list(tools)
        keep = self.static_mask(tools, threads=threads)
        return [tool for tool, kept in zip(tools, keep, strict=True) if kept]

    def filter(self, tools: Iterable[Any], ctx: Any = None, *,
               threads: int | None = None) -> list[Any]:
        tools = list(tools)
        keep = self.mask(tools, ctx, threads=threads)
        return [tool for tool, kept in zip(tools, keep, strict=True) if kept]

    def static_mask_pairs(self, pairs: Iterable[tuple[str, str]], *, indices: bool = False,
                          threads: int | None = None) -> list[Any]:
        check_threads(threads)
        read = [_pair_strings(pair, index) for index, pair in enumerate(list(pairs))]
        return _as(indices, [self.static_visible(Tool(s, n)) for s, n in read])

    def static_mask_columns(self, server_ids: Sequence[str], names: Sequence[str], *,
                            indices: bool = False, threads: int | None = None) -> list[Any]:
        check_threads(threads)
        server_ids, names = list(server_ids), list(names)
        if len(server_ids) != len(names):
            raise ValueError(
                f"server_ids and names differ in length ({len(server_ids)} and {len(names)})"
            )
        for index, (server_id, name) in enumerate(zip(server_ids, names, strict=True)):
            for what, value in (("server_ids", server_id), ("names", name)):
                if not isinstance(value, str):
                    raise TypeError(f"{what}[{index}] must be str, not {type(value).__name__}")
        pairs = zip(server_ids, names, strict=True)
        return _as(indices, [self.static_visible(Tool(s, n)) for s, n in pairs])

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (list(self.include), list(self.exclude)))


def _as(indices: bool, mask: list[bool]) -> list[Any]:
    return [i for i, keep in enumerate(mask) if keep] if indices else mask


def _rebuild(include: list[Any], exclude: list[Any]) -> ToolFilter:
    return ToolFilter.compile(include=include, exclude=exclude)


def compile(
    *, include: Sequence[Any] = (), exclude: Sequence[Any] = (), **options: Any,
) -> ToolFilter:
    return ToolFilter.compile(include=include, exclude=exclude, **options)
