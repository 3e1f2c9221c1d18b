"""The Rust-cored ToolFilter."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from . import _core
from ._errors import PatternError
from ._patterns import (
    FunctionPattern,
    Parsed,
    RegexPattern,
    StringPattern,
    call_fail_closed,
    parse_options,
)
from ._tool import Tool

__all__ = ["ToolFilter", "compile"]


class _Side:
    """One option (include or exclude) compiled: string globs in the Rust core,
    regexes and functions in Python."""

    __slots__ = ("fns", "loose", "patterns", "regexes", "rules", "sources", "string_indices")

    def __init__(self, option: str, parsed: list[Parsed], source: Sequence[Any]) -> None:
        self.loose = option == "exclude"
        self.sources = tuple(source)
        strings = [p for p in parsed if isinstance(p, StringPattern)]
        self.string_indices = [p.index for p in strings]
        try:
            rules = _core.RuleSet([p.text for p in strings], self.loose)
        except ValueError as err:
            position, reason = err.args
            index = self.string_indices[position]
            entry = source[index]
            raise PatternError(
                f"{option}[{index}]: {reason}: {entry!r}", option=option, index=index,
                entry=entry,
            ) from None
        self.rules = rules if len(rules) else None
        self.regexes = tuple(
            (p.index, _core.SegmentGlob(p.server_glob, self.loose), p.regex)
            for p in parsed if isinstance(p, RegexPattern)
        )
        self.fns: tuple[Callable[[Any, Any], Any], ...] = tuple(
            p.fn for p in parsed if isinstance(p, FunctionPattern)
        )
        self.patterns = parsed

    def static_match(self, server_id: str, name: str) -> bool:
        if self.rules is not None and self.rules.is_match(server_id, name):
            return True
        if self.regexes:
            folded = _core.fold_loose(name) if self.loose else None
            for _, server_glob, regex in self.regexes:
                if server_glob.is_match(server_id) and (
                    regex.search(name) is not None
                    or (folded is not None and regex.search(folded) is not None)
                ):
                    return True
        return False

    def has_static(self) -> bool:
        return self.rules is not None or bool(self.regexes)


def _pair(tool: Any) -> tuple[str, str]:
    """``(server_id, name)`` of a Tool, or of any object with those two str attributes."""
    if type(tool) is Tool:
        return tool.server_id, tool.name
    try:
        server_id, name = tool.server_id, tool.name
    except AttributeError:
        raise TypeError(
            f"expected a Tool (an object with server_id and name), got {type(tool).__name__}"
        ) from None
    for what, value in (("server_id", server_id), ("name", name)):
        if not isinstance(value, str):
            raise TypeError(f"{what} must be str, not {type(value).__name__}")
    return server_id, name


class ToolFilter:
    """Include/exclude patterns over ``(server_id, tool_name)``.

    Build with :meth:`compile`. Exclude always wins and matches loosely
    (per-character Unicode lower-case, ``-`` and ``.`` as ``_``); include matches
    exactly, and an empty include shows everything not excluded. String and
    regex patterns are *static* (:meth:`static_visible`, for refresh time);
    function patterns are called with ``ctx`` by :meth:`visible` and fail closed.
    """

    __slots__ = ("_exclude", "_include", "_include_empty", "_include_has_fn")

    def __init__(self) -> None:
        raise TypeError("use ToolFilter.compile(include=[...], exclude=[...])")

    @classmethod
    def compile(
        cls, *, include: Sequence[Any] = (), exclude: Sequence[Any] = (), **options: Any,
    ) -> ToolFilter:
        """Compiles the patterns; raises PatternError naming the option, index and entry."""
        parsed = parse_options({"include": include, "exclude": exclude, **options})
        self = object.__new__(cls)
        self._include = _Side("include", parsed["include"], include)
        self._exclude = _Side("exclude", parsed["exclude"], exclude)
        self._include_empty = not self._include.patterns
        self._include_has_fn = bool(self._include.fns)
        return self

    @property
    def include(self) -> tuple[Any, ...]:
        """The include patterns as written."""
        return self._include.sources

    @property
    def exclude(self) -> tuple[Any, ...]:
        """The exclude patterns as written."""
        return self._exclude.sources

    def __repr__(self) -> str:
        return f"ToolFilter.compile(include={list(self.include)!r}, exclude={list(self.exclude)!r})"

    def static_visible(self, tool: Any) -> bool:
        """Whether ``tool`` survives the string and regex patterns alone.

        Functions are not called: an exclude function never hides here, and an
        include list holding a function keeps every tool for :meth:`visible`.
        """
        server_id, name = _pair(tool)
        if self._exclude.static_match(server_id, name):
            return False
        if self._include_empty or self._include_has_fn:
            return True
        return self._include.static_match(server_id, name)

    def visible(self, tool: Any, ctx: Any = None) -> bool:
        """Whether ``tool`` is visible under every pattern, functions included.

        Order: static excludes, exclude functions (first that hides stops), then
        empty include = visible, static includes, include functions (first True
        stops). A function that raises or returns a non-bool hides the tool.
        """
        server_id, name = _pair(tool)
        exclude = self._exclude
        if exclude.static_match(server_id, name):
            return False
        for fn in exclude.fns:
            if call_fail_closed(fn, tool, ctx) is not False:
                return False
        if self._include_empty:
            return True
        include = self._include
        if include.static_match(server_id, name):
            return True
        return any(call_fail_closed(fn, tool, ctx) is True for fn in include.fns)

    def static_filter(self, tools: Iterable[Any]) -> list[Any]:
        """The tools that :meth:`static_visible` keeps, in input order (same objects)."""
        return [tool for tool in tools if self.static_visible(tool)]

    def filter(self, tools: Iterable[Any], ctx: Any = None) -> list[Any]:
        """The tools that :meth:`visible` keeps for ``ctx``, in input order (same objects)."""
        return [tool for tool in tools if self.visible(tool, ctx)]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), list(self.include), list(self.exclude)))

    # --- delegates: explain (explain.py) and config files (config.py) ---------------

    def explain(self, tool: Any, ctx: Any = None) -> Any:
        """Why :meth:`visible` says what it says: a :class:`~toolfilter_fast.explain.Decision`."""
        from .explain import explain

        return explain(self, tool, ctx)

    @classmethod
    def from_config(cls, config: Any) -> ToolFilter:
        """A filter from a parsed config mapping (see ``toolfilter_fast.config``)."""
        from .config import filter_from_config

        return filter_from_config(config, cls=cls)

    @classmethod
    def from_file(cls, path: Any) -> ToolFilter:
        """A filter from a TOML or JSON config file (see ``toolfilter_fast.config``)."""
        from .config import filter_from_file

        return filter_from_file(path, cls=cls)


def _rebuild(cls: type[ToolFilter], include: list[Any], exclude: list[Any]) -> ToolFilter:
    return cls.compile(include=include, exclude=exclude)


def compile(
    *, include: Sequence[Any] = (), exclude: Sequence[Any] = (), **options: Any,
) -> ToolFilter:
    """Same as :meth:`ToolFilter.compile`."""
    return ToolFilter.compile(include=include, exclude=exclude, **options)
