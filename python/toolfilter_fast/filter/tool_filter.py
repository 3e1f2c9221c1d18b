"""The Rust-cored ToolFilter."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .. import _core
from .._errors import PatternError
from .._tool import _pair
from .._version import __version__
from .explain import Decision, explain
from .judges import CelJudge, SharedCtx, hints_of
from .patterns import (
    AnnotationPattern,
    CelPattern,
    FunctionPattern,
    RegexPattern,
    call_fail_closed,
    cel_error,
    check_option_names,
    classify,
    option_entries,
)

__all__ = ["ToolFilter", "compile"]


_EXCLUDED, _EXCLUDE_REGEX, _INCLUDED, _INCLUDE_REGEX = 1, 2, 4, 8
_HIDDEN, _VISIBLE, _UNDECIDED = 0, 1, 2


class _Side:
    """One option: its string patterns and annotation patterns go to the core;
    regexes, functions and expressions stay here.

    The entries are not looped over in Python: the core compiles the ``str``
    ones, hands over the plain ``(str, re.Pattern)`` entries it has checked,
    and reports where the others are (few, usually): only those are
    classified here. A static expression (one that does not read ``ctx``)
    is judged like a regex, for every server: the core is told that a regex
    scoped to ``*`` may decide. A dynamic one is called like a function, in
    its place among them.
    """

    __slots__ = ("_regexes", "fns", "hint_patterns", "loose", "regex_pairs", "regex_servers",
                 "sources", "static_cels")

    loose: bool
    sources: tuple[Any, ...]
    regex_pairs: list[tuple[str, Any]]
    regex_servers: list[str]
    hint_patterns: list[tuple[tuple[bool | None, ...], list[str]]]
    static_cels: tuple[CelJudge, ...]

    def __init__(self, option: str, build: _core.StaticBuild) -> None:
        self.loose = option == "exclude"
        self.sources = build.sources(option)
        regexes: list[tuple[str, Any]] = []
        fns: list[Callable[[Any, Any], Any]] = []
        cels: list[CelJudge] = []
        self.hint_patterns = []
        for parsed in classify(option, self.sources, build.others(option)):
            if isinstance(parsed, RegexPattern):
                regexes.append((parsed.server_glob, parsed.regex))
            elif isinstance(parsed, FunctionPattern):
                fns.append(parsed.fn)
            elif isinstance(parsed, AnnotationPattern):
                self.hint_patterns.append((parsed.entry.want(), list(parsed.entry.trusted)))
            elif isinstance(parsed, CelPattern):
                try:
                    program = _core.CelProgram(parsed.entry.source, parsed.entry.max_cost)
                except ValueError as err:
                    raise cel_error(option, parsed.index, parsed.entry, str(err)) from None
                judge = CelJudge(parsed.entry, program)
                (fns if judge.dynamic else cels).append(judge)
        self.regex_pairs = build.regexes(option) + regexes
        self.static_cels = tuple(cels)
        self.regex_servers = [server_glob for server_glob, _ in self.regex_pairs]
        if cels:
            self.regex_servers.append("*")
        self._regexes: tuple[tuple[Any, Any], ...] | None = None
        self.fns: tuple[Callable[[Any, Any], Any], ...] = tuple(fns)

    def static_match(self, tool: Any, server_id: str, name: str) -> bool:
        """Whether a regex or a static expression of this option matches
        (``tool`` may be None: a pair batch has the two strings only). An
        expression that gives no verdict matches for exclude and does not for
        include: it fails closed."""
        return self._regex_match(server_id, name) or any(
            self._cel_match(judge, tool, server_id, name) for judge in self.static_cels
        )

    def _cel_match(self, judge: CelJudge, tool: Any, server_id: str, name: str) -> bool:
        verdict, _ = judge.verdict(tool, server_id, name, None)
        return self.loose if verdict is None else verdict

    def _regex_match(self, server_id: str, name: str) -> bool:
        regexes = self._regexes
        if regexes is None:
            # Compiled on first use, not with the filter: most tools never
            # reach a regex. Two threads may both build it; either is right.
            regexes = self._regexes = tuple(
                (_core.SegmentGlob(server_glob, self.loose), regex)
                for server_glob, regex in self.regex_pairs
            )
        folded = _core.fold_loose(name) if self.loose else None
        for server_glob, regex in regexes:
            if server_glob.is_match(server_id) and (
                regex.search(name) is not None
                or (folded is not None and regex.search(folded) is not None)
            ):
                return True
        return False


def _compile(include: Any, exclude: Any) -> tuple[_Side, _Side, _core.StaticFilter]:
    """Both options' sides and the compiled static filter. The core starts on
    the string patterns (exclude's on a thread of its own, for long options)
    while the other entries are classified here; errors come in the order of
    the pure reference: a bad regex or function entry (include's first), then
    a bad string pattern (include's first)."""
    # An exact list or tuple goes to the core as it is (a list is copied as
    # it is read); anything else is snapshot here, through its own iterator.
    exact = (list, tuple)
    include_entries = include if type(include) in exact else option_entries("include", include)
    # Exclude's PatternError for not being a list comes after include's own.
    exclude_ok = isinstance(exclude, (list, tuple))
    exclude_entries = (
        exclude if type(exclude) in exact else tuple(exclude) if exclude_ok else ()
    )
    build = _core.StaticBuild(include_entries, exclude_entries)
    try:
        include_side = _Side("include", build)
        if not exclude_ok:
            option_entries("exclude", exclude)  # raises
        exclude_side = _Side("exclude", build)
    except BaseException:
        # The helper thread may be compiling exclude's patterns: a compile it
        # has not begun is skipped (the traceback would keep `build` alive).
        build.abandon()
        raise
    include_open = not include_side.sources or bool(include_side.fns)
    try:
        static = build.finish(
            include_side.regex_servers, exclude_side.regex_servers, include_open,
            include_side.hint_patterns, exclude_side.hint_patterns,
        )
    except ValueError as err:
        option, index, reason = err.args
        entry = (include_side if option == "include" else exclude_side).sources[index]
        raise PatternError(
            f"{option}[{index}]: {reason}: {entry!r}", option=option, index=index, entry=entry,
        ) from None
    return include_side, exclude_side, static


class ToolFilter:
    """Include/exclude patterns over ``(server_id, tool_name)``.

    Build with :meth:`compile`. Exclude always wins and matches loosely
    (per-character Unicode lower-case, ``-`` and ``.`` as ``_``); include matches
    exactly, and an empty include shows everything not excluded. String and
    regex patterns are *static* (:meth:`static_visible`, for refresh time);
    function patterns are called with ``ctx`` by :meth:`visible` and fail closed.
    """

    __slots__ = ("_cel_programs", "_dynamic", "_exclude", "_exclude_fns", "_flags", "_include",
                 "_include_empty", "_include_fns", "_outcome", "_static", "_uses_hints")

    # Set once by compile, through object.__setattr__ (assignment is refused).
    _include: _Side
    _exclude: _Side
    _include_empty: bool
    _static: _core.StaticFilter
    _dynamic: bool
    _flags: Callable[[str, str, int], int]
    _outcome: Callable[[str, str, int], int]
    _uses_hints: bool
    _include_fns: tuple[Callable[[Any, Any], Any], ...]
    _exclude_fns: tuple[Callable[[Any, Any], Any], ...]
    _cel_programs: tuple[_core.CelProgram, ...]

    def __init__(self) -> None:
        raise TypeError("use ToolFilter.compile(include=[...], exclude=[...])")

    @classmethod
    def compile(
        cls, *, include: Sequence[Any] = (), exclude: Sequence[Any] = (), **options: Any,
    ) -> ToolFilter:
        """Compiles the patterns; raises PatternError naming the option, index and entry."""
        check_option_names(options)
        self = object.__new__(cls)
        include_side, exclude_side, static = _compile(include, exclude)
        include_empty = not include_side.sources
        init = object.__setattr__  # the filter refuses assignment once compiled
        init(self, "_include", include_side)
        init(self, "_exclude", exclude_side)
        init(self, "_include_empty", include_empty)
        init(self, "_static", static)
        init(self, "_dynamic", bool(include_side.fns or exclude_side.fns))
        # Bound once: the scalar paths are a handful of attribute reads and one core call.
        init(self, "_flags", static.flags)
        init(self, "_outcome", static.outcome)
        init(self, "_include_fns", include_side.fns)
        init(self, "_exclude_fns", exclude_side.fns)
        init(self, "_uses_hints", static.uses_hints)
        # The dynamic expressions: a call converts only what they read of its ctx.
        init(self, "_cel_programs", tuple(
            fn.program for fn in include_side.fns + exclude_side.fns if type(fn) is CelJudge
        ))
        return self

    # Immutable once compiled: a pattern function (or anyone) that tries to
    # swap a filter's parts fails loudly instead of changing what others see.
    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ToolFilter is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"ToolFilter is immutable: cannot delete {name!r}")

    @property
    def include(self) -> tuple[Any, ...]:
        """The include patterns as written."""
        return self._include.sources

    @property
    def dynamic(self) -> bool:
        """Whether :meth:`visible` may depend on ``ctx``: the filter has function
        patterns or expressions that read ``ctx``."""
        return self._dynamic

    @property
    def exclude(self) -> tuple[Any, ...]:
        """The exclude patterns as written."""
        return self._exclude.sources

    def __repr__(self) -> str:
        return f"ToolFilter.compile(include={list(self.include)!r}, exclude={list(self.exclude)!r})"

    def static_visible(self, tool: Any) -> bool:
        """Whether ``tool`` survives the static patterns alone: strings,
        regexes, annotation patterns and expressions that do not read ``ctx``.

        Functions (and expressions reading ``ctx``) are not called: an exclude
        function never hides here, and an include list holding a function
        keeps every tool for :meth:`visible`.
        """
        server_id, name = _pair(tool)
        hints = hints_of(tool) if self._uses_hints else 0
        outcome = self._outcome(server_id, name, hints)
        if outcome != _UNDECIDED:
            return outcome == _VISIBLE
        return self._static_tool(tool, server_id, name, hints)

    def _static_tool(self, tool: Any, server_id: str, name: str, hints: int) -> bool:
        bits = self._flags(server_id, name, hints)
        if bits & _EXCLUDED:
            return False
        if bits & _EXCLUDE_REGEX and self._exclude.static_match(tool, server_id, name):
            return False
        if self._include_empty or self._include_fns or bits & _INCLUDED:
            return True
        return bool(bits & _INCLUDE_REGEX) and self._include.static_match(tool, server_id, name)

    def _static_pair(self, server_id: str, name: str) -> bool:
        # A pair has no annotations: every hint takes its default.
        return self._static_tool(None, server_id, name, 0)

    def visible(self, tool: Any, ctx: Any = None) -> bool:
        """Whether ``tool`` is visible under every pattern, functions included.

        Order: static excludes, exclude functions (first that hides stops), then
        empty include = visible, static includes, include functions (first True
        stops). A function that raises or returns a non-bool hides the tool.
        No function is called once the static patterns have decided: a tool
        that an include list without functions does not statically include is
        hidden before any exclude function runs (as the batches do).
        """
        return self._visible(tool, ctx, SharedCtx(ctx, self._cel_programs))

    def _visible(self, tool: Any, ctx: Any, shared: SharedCtx) -> bool:
        """:meth:`visible`, with the call's ``ctx`` as expressions read it
        (``shared``: converted once for all the tools of a batch)."""
        server_id, name = _pair(tool)
        bits = self._flags(server_id, name, hints_of(tool) if self._uses_hints else 0)
        if bits & _EXCLUDED:
            return False
        if bits & _EXCLUDE_REGEX and self._exclude.static_match(tool, server_id, name):
            return False
        included = bool(self._include_empty or bits & _INCLUDED or (
            bits & _INCLUDE_REGEX and self._include.static_match(tool, server_id, name)
        ))
        if not included and not self._include_fns:
            return False
        # An expression reads the call's converted ctx (``shared``); a function, ctx itself.
        for fn in self._exclude_fns:
            if (fn.call_shared(tool, shared) if type(fn) is CelJudge
                    else call_fail_closed(fn, tool, ctx)) is not False:
                return False
        if included:
            return True
        for fn in self._include_fns:
            if (fn.call_shared(tool, shared) if type(fn) is CelJudge
                    else call_fail_closed(fn, tool, ctx)) is True:
                return True
        return False

    # --- batches -------------------------------------------------------------------
    #
    # The core decides string patterns for a whole batch (both cores for big
    # batches); Python is called back only for the tools a regex may decide,
    # and, in the dynamic forms, for the tools functions judge.
    #
    # A list is read in place, not copied: the core holds the GIL from the
    # first item read to the last object taken for the answer and runs no
    # Python code in between (a tool read through a property makes it switch
    # to a private copy first), so pattern functions, properties and other
    # threads cannot shift an item under it. The callbacks receive the objects
    # that were judged, never a position to look up again. Anything but an
    # exact list (a tuple, a generator, a list subclass) is copied into one.

    def _tools_batch(self, tools: Iterable[Any], mode: str, ctx: Any, dynamic: bool,
                     threads: int | None) -> list[Any]:
        items = _as_list(tools)
        read_hints = hints_of if self._uses_hints else None
        if dynamic and self._dynamic:
            shared = SharedCtx(ctx, self._cel_programs)

            def judge(tool: Any) -> bool:
                return self._visible(tool, ctx, shared)
            return self._static.select_tools(items, mode, judge, True, threads, read_hints)
        return self._static.select_tools(items, mode, self.static_visible, False, threads,
                                         read_hints)

    def static_filter(self, tools: Iterable[Any], *, threads: int | None = None) -> list[Any]:
        """The tools that :meth:`static_visible` keeps, in input order (same objects)."""
        return self._tools_batch(tools, "items", None, False, threads)

    def filter(self, tools: Iterable[Any], ctx: Any = None, *,
               threads: int | None = None) -> list[Any]:
        """The tools that :meth:`visible` keeps for ``ctx``, in input order (same objects)."""
        return self._tools_batch(tools, "items", ctx, True, threads)

    def static_mask(self, tools: Iterable[Any], *, indices: bool = False,
                    threads: int | None = None) -> list[Any]:
        """:meth:`static_visible` of every tool as a ``list[bool]``, or with
        ``indices=True`` the indices of the visible ones."""
        return self._tools_batch(tools, "indices" if indices else "mask", None, False, threads)

    def mask(self, tools: Iterable[Any], ctx: Any = None, *, indices: bool = False,
             threads: int | None = None) -> list[Any]:
        """:meth:`visible` of every tool for ``ctx``, as bools or indices."""
        return self._tools_batch(tools, "indices" if indices else "mask", ctx, True, threads)

    def static_mask_pairs(self, pairs: Iterable[tuple[str, str]], *, indices: bool = False,
                          threads: int | None = None) -> list[Any]:
        """:meth:`static_visible` over ``(server_id, name)`` tuples, as bools or indices."""
        return self._static.select_pairs(_as_list(pairs), "indices" if indices else "mask",
                                         self._static_pair, threads)

    def static_mask_columns(self, server_ids: Sequence[str], names: Sequence[str], *,
                            indices: bool = False, threads: int | None = None) -> list[Any]:
        """:meth:`static_visible` over two parallel lists of strings, as bools or indices."""
        return self._static.select_columns(
            _as_list(server_ids), _as_list(names), "indices" if indices else "mask",
            self._static_pair, threads,
        )

    def static_mask_arrow(self, server_ids: Any, names: Any, *,
                          threads: int | None = None) -> Any:
        """:meth:`static_visible` over two Arrow string columns, as a ``pyarrow.BooleanArray``.

        ``server_ids`` and ``names`` are anything that exports Arrow data through the
        PyCapsule interface (``__arrow_c_array__`` or ``__arrow_c_stream__``): pyarrow
        arrays and chunked arrays, Polars series, nanoarrow arrays, DuckDB results;
        plain, large or view strings, dictionary-encoded (any integer keys: a Polars
        ``Categorical``, pyarrow's ``dictionary_encode()``) or run-end-encoded,
        chunked alike or not. The core reads their
        buffers in place, making no Python object per row. A row whose server id or
        name is null is hidden (``False``). Every non-null value must be UTF-8, as
        Arrow strings are: one that is not raises ``ValueError`` naming the row.
        Annotation patterns see every hint missing here, as in
        :meth:`static_mask_pairs`. Needs pyarrow (the ``arrow`` extra) for the answer.

        Each array is checked as it is imported: a type that is not a string layout is
        a ``TypeError``; negative or overflowing lengths, a wrong buffer count, a
        missing buffer, a null count the validity bitmap disagrees with, offsets that
        start below 0 or decrease, views outside their data buffers' listed sizes,
        dictionary keys outside the dictionary, and run ends that do not rise from 1
        to the array's end are a ``ValueError`` naming the column and what is wrong.
        The trust boundary: the Arrow C data interface carries no buffer sizes, so a
        buffer is trusted to reach as far as the array's own fields imply (the values
        up to the last offset, and so on), as any C pointer is; a producer in the same process that
        allocated less than its offsets claim is not caught (docs/batches.md).
        """
        try:
            import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
        except ImportError as err:  # pragma: no cover - the extra is installed in CI
            raise ImportError(
                "static_mask_arrow answers with a pyarrow array: pip install "
                "'toolfilter_fast[arrow]'"
            ) from err
        bits, length = _core.static_mask_arrow(self._static, server_ids, names,
                                               self._static_pair, threads)
        return pa.BooleanArray.from_buffers(pa.bool_(), length, [None, pa.py_buffer(bits)])

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), list(self.include), list(self.exclude), PICKLE_FORMAT))

    # --- delegates: explain (explain.py) and config files (../config.py) ------------

    def explain(self, tool: Any, ctx: Any = None) -> Decision:
        """Why :meth:`visible` says what it says: a :class:`~toolfilter_fast.Decision`."""
        return explain(self, tool, ctx)

    @classmethod
    def from_config(cls, config: Any) -> ToolFilter:
        """A filter from a parsed config mapping (see ``toolfilter_fast.config``)."""
        filter_from_config = _config_reader("config")
        result: ToolFilter = filter_from_config(config, cls=cls)
        return result

    @classmethod
    def from_file(cls, path: Any) -> ToolFilter:
        """A filter from a TOML or JSON config file (see ``toolfilter_fast.config``)."""
        filter_from_file = _config_reader("file")
        result: ToolFilter = filter_from_file(path, cls=cls)
        return result


#: The config reader's entry points, ``"config"`` (``filter_from_config``) and
#: ``"file"`` (``filter_from_file``), which ``toolfilter_fast.config`` puts
#: here as it loads: config builds ToolFilters, so it imports this module, and
#: this module does not import it back. The package's ``__init__`` loads
#: config, so they are here before any ToolFilter can be made.
CONFIG_READERS: dict[str, Callable[..., Any]] = {}


def _config_reader(which: str) -> Callable[..., Any]:
    try:
        return CONFIG_READERS[which]
    except KeyError:
        raise RuntimeError("toolfilter_fast.config is not loaded (import toolfilter_fast)"
                           ) from None


#: What a pickled ToolFilter carries: ``_rebuild(cls, include, exclude, format)``,
#: the patterns as written (recompiled, so re-checked, on load). Releases that
#: change this bump the number; ``_rebuild`` stays the entry point so that an
#: older release can say so instead of failing obscurely. Pickles made before
#: the number existed carry no fourth argument and read as format 1.
PICKLE_FORMAT = 1


def _as_list(items: Iterable[Any]) -> list[Any]:
    """``items`` itself when it is an exact list (a batch reads it in place), else a list of it."""
    return items if type(items) is list else list(items)


def _rebuild(cls: type[ToolFilter], include: list[Any], exclude: list[Any],
             format: int = 1, *newer: Any) -> ToolFilter:
    if type(format) is not int or not 1 <= format <= PICKLE_FORMAT or newer:
        raise ValueError(
            f"cannot unpickle this ToolFilter: it was pickled in format {format!r}, and "
            f"toolfilter_fast {__version__} reads formats 1 to {PICKLE_FORMAT}; unpickle it "
            "with the release that made it, or rebuild it with ToolFilter.compile"
        )
    return cls.compile(include=include, exclude=exclude)


def compile(
    *, include: Sequence[Any] = (), exclude: Sequence[Any] = (), **options: Any,
) -> ToolFilter:
    """Same as :meth:`ToolFilter.compile`."""
    return ToolFilter.compile(include=include, exclude=exclude, **options)
