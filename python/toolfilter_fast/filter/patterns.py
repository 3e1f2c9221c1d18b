"""Pattern classification shared by the fast path and the reference.

This module decides what *kind* each entry of ``include``/``exclude`` is and
refuses what is no pattern at all. How string globs are split and matched is
left to each implementation (the Rust core, or ``reference``), so the two can
be compared.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Union

from .._errors import PatternError
from .entries import Annotations, Cel

__all__ = [
    "OPTIONS",
    "AnnotationPattern",
    "CelPattern",
    "FunctionPattern",
    "Pattern",
    "RegexPattern",
    "StringPattern",
    "call_fail_closed",
    "check_option_names",
    "classify",
    "option_entries",
    "parse_options",
]

OPTIONS = ("include", "exclude")

#: What a user may write in ``include``/``exclude``.
Pattern = Union[str, "tuple[str, re.Pattern[str]]", Callable[[Any, Any], bool], Annotations, Cel]


@dataclass(frozen=True)
class StringPattern:
    index: int
    text: str


@dataclass(frozen=True)
class RegexPattern:
    index: int
    server_glob: str
    regex: re.Pattern[str]


@dataclass(frozen=True)
class FunctionPattern:
    index: int
    fn: Callable[[Any, Any], Any]


@dataclass(frozen=True)
class AnnotationPattern:
    index: int
    entry: Annotations


@dataclass(frozen=True)
class CelPattern:
    """A CEL entry, classified but not compiled: each implementation compiles
    it with its own CEL engine (see :func:`cel_error`)."""

    index: int
    entry: Cel


Parsed = StringPattern | RegexPattern | FunctionPattern | AnnotationPattern | CelPattern

_EXPECTED = (
    "expected a 'server/tool' string, a (server_glob, re.Pattern) tuple, "
    "a function (tool, ctx) -> bool, Annotations(...) or Cel(...)"
)


def _fail(option: str, index: int, entry: Any, reason: str) -> PatternError:
    return PatternError(
        f"{option}[{index}]: {reason}: {entry!r}", option=option, index=index, entry=entry,
    )


def server_glob_problem(server_glob: str) -> str | None:
    """Why ``server_glob`` cannot be a server segment (same words as the core).
    Decided by the string's value, as the core reads it (a ``str`` subclass's
    own ``__eq__`` or ``__contains__`` is not asked)."""
    server_glob = str.__str__(server_glob)
    if server_glob == "":
        return "empty server segment"
    if ":" in server_glob:
        return "server segment contains ':'"
    if "/" in server_glob:
        return "server glob contains '/'"
    return None


def _is_async(fn: Any) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    call = None if inspect.isroutine(fn) else type(fn).__dict__.get("__call__")
    return any(
        inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f)
        for f in (fn, call) if f is not None
    )


def _function_problem(fn: Any) -> str | None:
    if _is_async(fn):
        return "coroutine functions cannot be patterns (a pattern must answer synchronously)"
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        # Not introspectable (some builtins): accepted; a wrong arity then fails
        # closed at call time like any other exception.
        return None
    try:
        signature.bind(None, None)
    except TypeError:
        return f"function cannot be called as fn(tool, ctx) (signature {signature})"
    return None


def cel_error(option: str, index: int, entry: Cel, detail: str) -> PatternError:
    """The PatternError for a CEL entry its engine refused; ``detail`` is the
    engine's own words (so they differ between the fast path and the reference),
    on one line: an error is one line wherever it is shown (the command line's
    ``toolfilter CMD: error: ...``)."""
    detail = " ".join(line.strip() for line in detail.splitlines() if line.strip())
    return _fail(option, index, entry, f"invalid CEL expression ({detail})")


def _parse_entry(option: str, index: int, entry: Any) -> Parsed:
    if isinstance(entry, str):
        return StringPattern(index, entry)
    if isinstance(entry, Annotations):
        return AnnotationPattern(index, entry)
    if isinstance(entry, Cel):
        return CelPattern(index, entry)
    if isinstance(entry, tuple):
        if len(entry) != 2:
            raise _fail(option, index, entry, f"a tuple pattern has 2 elements; {_EXPECTED}")
        server_glob, regex = entry
        if not isinstance(server_glob, str):
            raise _fail(option, index, entry, "the server glob of a regex pattern must be str")
        if not isinstance(regex, re.Pattern):
            raise _fail(
                option, index, entry,
                "the second element must be a compiled re.Pattern (use re.compile)",
            )
        if not isinstance(regex.pattern, str):
            raise _fail(option, index, entry, "a bytes regex cannot match tool names")
        problem = server_glob_problem(server_glob)
        if problem:
            raise _fail(option, index, entry, problem)
        return RegexPattern(index, server_glob, regex)
    if callable(entry) and not isinstance(entry, (bytes, bytearray, re.Pattern, type)):
        problem = _function_problem(entry)
        if problem:
            raise _fail(option, index, entry, problem)
        return FunctionPattern(index, entry)
    raise _fail(option, index, entry, f"unrecognised pattern; {_EXPECTED}")


def parse_option(option: str, value: Any) -> list[Parsed]:
    """Classifies every entry of one option, raising PatternError for the first bad one."""
    if not isinstance(value, (list, tuple)):
        raise PatternError(
            f"{option}: expected a list or tuple of patterns, got {type(value).__name__} "
            f"{value!r}",
            option=option,
        )
    return [_parse_entry(option, index, entry) for index, entry in enumerate(value)]


def check_option_names(options: Mapping[str, Any]) -> None:
    """Refuses an option that is neither ``include`` nor ``exclude``."""
    for name in options:
        if name not in OPTIONS:
            raise PatternError(
                f"unknown option {name!r} (the options are 'include' and 'exclude')",
                option=name,
            )


def option_entries(option: str, value: Any) -> tuple[Any, ...]:
    """The entries of one option, as a tuple (a snapshot of a list); the same
    PatternError as ``parse_option`` when ``value`` is no list or tuple."""
    if not isinstance(value, (list, tuple)):
        parse_option(option, value)  # raises the same error
    return tuple(value)


def classify(option: str, entries: tuple[Any, ...], positions: Iterable[int]) -> list[Parsed]:
    """``entries[i]`` classified for each ``i`` of ``positions``, in order,
    checked as ``parse_option`` checks them (the same PatternError for the
    first bad one): for compiling at scale, where the core takes the string
    entries and the plain ``(str, re.Pattern)`` ones (all but a few) and only
    the places of the others come here."""
    return [_parse_entry(option, index, entries[index]) for index in positions]


def parse_options(options: Mapping[str, Any]) -> dict[str, list[Parsed]]:
    """Checks the option names, then classifies ``include`` and ``exclude``."""
    check_option_names(options)
    return {name: parse_option(name, options.get(name, [])) for name in OPTIONS}


def call_fail_closed(fn: Callable[[Any, Any], Any], tool: Any, ctx: Any) -> bool | None:
    """Calls a function pattern: its bool, or None when it raised an Exception
    or returned anything but a real bool. BaseExceptions (KeyboardInterrupt,
    SystemExit) propagate."""
    try:
        result = fn(tool, ctx)
    except Exception:
        return None
    if result is True or result is False:
        return result
    if inspect.iscoroutine(result):
        result.close()  # never awaited: close it so no warning leaks out
    return None
