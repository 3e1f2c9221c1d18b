"""Stubs for the Rust extension module ``toolfilter_fast._core``."""

from collections.abc import Callable, Iterable, Sequence
from typing import Any

def register_tool_class(probe: Any) -> bool:
    """Learns the slot offsets of ``type(probe)``'s ``server_id`` and ``name`` for
    batch reads; False (and no fast read) unless both are plain slots."""

# --- tool filter ---------------------------------------------------------------

def fold_loose(s: str) -> str:
    """Per-character Unicode lower-case, then ``-`` and ``.`` to ``_``."""

def fold_lower(s: str) -> str:
    """Per-character Unicode lower-case."""

def glob_match(pattern: str, s: str) -> bool:
    """Anchored segment-glob match; only ``*`` is special."""

def server_glob_problem(server_glob: str) -> str | None: ...

class RuleSet:
    """Compiled ``server/tool`` string patterns; ValueError((index, reason)) on a bad one."""

    def __init__(self, patterns: Sequence[str], loose: bool = False) -> None: ...
    def first_match(self, server_id: str, name: str) -> int | None: ...
    def is_match(self, server_id: str, name: str) -> bool: ...
    def __len__(self) -> int: ...

class SegmentGlob:
    def __init__(self, pattern: str, loose: bool = False) -> None: ...
    def is_match(self, s: str) -> bool: ...

class StaticBuild:
    """A static filter being compiled, from the options' entries as written.

    Its ``str`` entries are read at once and compiled (exclude's on a thread of
    its own when both options are long); the others are the caller's.
    """

    def __init__(
        self,
        include: list[object] | tuple[object, ...],
        exclude: list[object] | tuple[object, ...],
    ) -> None: ...
    def sources(self, option: str) -> tuple[object, ...]:
        """The entries of ``"include"`` or ``"exclude"`` as a tuple (a list's snapshot)."""
    def regexes(self, option: str) -> list[tuple[str, Any]]:
        """The plain ``(server_glob, re.Pattern)`` entries of the option, checked."""
    def others(self, option: str) -> list[int]:
        """The places of the entries of ``"include"`` or ``"exclude"`` that are neither
        ``str`` nor plain regex entries: the caller's to judge."""
    def abandon(self) -> None:
        """Gives the build up: the helper thread skips a compile it has not begun."""
    def finish(
        self, include_regex_servers: Sequence[str], exclude_regex_servers: Sequence[str],
        include_open: bool,
        include_hints: Sequence[tuple[Sequence[bool | None], Sequence[str]]] = ...,
        exclude_hints: Sequence[tuple[Sequence[bool | None], Sequence[str]]] = ...,
    ) -> StaticFilter:
        """The compiled filter; ValueError((option, index, reason)) on a bad pattern
        (include's first), ``index`` being its place in the option. Once only.
        ``*_hints``: the annotation patterns, ``(want, trusted)`` each."""

class StaticFilter:
    """The static part of a ToolFilter (from ``StaticBuild.finish``)."""

    @property
    def uses_hints(self) -> bool:
        """Whether the filter has annotation patterns."""
    def flags(self, server_id: str, name: str, hints: int = 0) -> int: ...
    def outcome(self, server_id: str, name: str, hints: int = 0) -> int: ...
    def select_tools(
        self, tools: list[object], mode: str, judge: Callable[[object], bool] | None = None,
        recheck: bool = False, threads: int | None = None,
        hints_of: Callable[[object], int] | None = None,
    ) -> list[object]: ...
    def select_pairs(
        self, pairs: list[tuple[str, str]], mode: str,
        judge: Callable[[str, str], bool] | None = None, threads: int | None = None,
    ) -> list[object]: ...
    def select_columns(
        self, server_ids: list[str], names: list[str], mode: str,
        judge: Callable[[str, str], bool] | None = None, threads: int | None = None,
    ) -> list[object]: ...

def static_mask_arrow(
    filter: StaticFilter, server_ids: object, names: object,
    judge: Callable[[str, str], bool] | None = None, threads: int | None = None,
) -> tuple[bytes, int]:
    """The static decision of every row of two Arrow string columns, as an Arrow
    boolean bitmap (set where visible) and its length."""

def arrow_count_slashes(names: object) -> int:
    """How many names hold a ``/``: one ``memchr`` pass over the column, for benchmarks."""

# --- expression patterns and hints ---------------------------------------------

HINTS: tuple[str, str, str, str]

def effective_hints(raw: int, trusted: bool) -> int:
    """The four effective hint bits of a raw hint byte (all defaults when untrusted)."""

class CelProgram:
    """A compiled CEL expression; ValueError with the parser's words (or the
    cost estimate over ``max_cost``) when it is not one."""

    def __init__(self, source: str, max_cost: int | None = None) -> None: ...
    @property
    def reads_ctx(self) -> bool:
        """Whether the expression reads ``ctx`` (a dynamic pattern)."""
    @property
    def max_cost(self) -> int:
        """The cost budget: comprehension body runs per evaluation."""
    @property
    def estimate(self) -> int:
        """The compile-time estimate of the body runs (at most ``max_cost``)."""
    def evaluate(self, tool: object, ctx: object) -> tuple[bool | None, str | None]:
        """``(verdict, None)``, or ``(None, why)`` when there is no bool verdict;
        ``ctx`` may be a :class:`CelValue`."""
    def evaluate_tool(
        self, tool: object, server_id: object, name: object, trusted: bool, ctx: object,
        hints_of: Callable[[Any], int],
    ) -> tuple[bool | None, str | None]:
        """:meth:`evaluate` of the ``tool`` value an expression sees of the object
        ``tool`` (None for a bare pair): ``title``, ``description`` and ``meta``
        read as attributes, ``annotations`` the effective hints of
        ``hints_of(tool)``; an exception reading one is raised."""

class CelValue:
    """A Python value converted to CEL once (a call's ``ctx``), lent to many evaluations:
    built for what ``programs`` read of it (all of it when None), the rest checked."""

    def __init__(self, value: object, programs: tuple[CelProgram, ...] | None = None) -> None: ...

# --- tool groups ---------------------------------------------------------------

def group_glob_match(pattern: str, name: str) -> bool:
    """Single-star glob: only the first ``*`` is a wildcard, later ones are literal."""

class GroupSet:
    """Compiled tool filter groups, from ``(always, tools, keywords)`` triples."""

    def __init__(self, groups: Sequence[tuple[bool, Sequence[str], Sequence[str]]]) -> None: ...
    def __len__(self) -> int: ...
    def live_groups(self, message: str | None = None) -> list[int]:
        """Indices of the groups live for ``message``; for None, the ``always`` groups."""
    def select(
        self,
        names: list[Any] | tuple[Any, ...],
        message: str | None,
        mcp: set[Any] | frozenset[Any] | list[bool] | None,
        *,
        hidden: bool = False,
        dedupe: bool = False,
        indices: bool = False,
    ) -> list[Any]:
        """The visible names (``hidden``: the MCP names no live group admits) in
        input order; ``message=None``: the MCP names an ``always`` group admits."""

# --- focus lens ----------------------------------------------------------------

def focus_select(
    tools: tuple[Any, ...], name_of: Callable[[Any, int], str], session_id: str,
    focused_id: str | None, hovered_id: str | None, meta_name: str | None, max_tools: int,
) -> list[int]:
    """The lens result as indices into the tuple ``tools``; ``-1`` is the meta-tool."""

def focus_discover_json(
    tools: list[Any] | tuple[Any, ...], fields_of: Callable[[Any], tuple[str | None, str | None]],
    session_id: str, query: str,
) -> str:
    """The JSON list of ``{"name", "description"}`` of the session's tools that ``query`` finds."""

# --- ranked tool search --------------------------------------------------------

class SearchIndex:
    """BM25F with server evidence over ``(name, title, description, server, params)``
    tuples (each a ``str`` or None), or with ``text_of`` over tools (exact dicts read
    by the core, the others by ``text_of``); ValueError for a weight out of range."""

    def __init__(
        self, texts: Sequence[Any], weights: tuple[float, float, float, float, float],
        k1: float, server_k1: float, b: float, server_evidence: float, synonyms: float,
        path_words: bool,
        steps: bool,
        text_of: Callable[[Any], tuple[str | None, ...]] | None = None,
    ) -> None: ...
    def __len__(self) -> int: ...
    def has_terms(self, query: str) -> bool: ...
    def scores(self, query: str, among: list[int] | tuple[int, ...] | None = None) -> list[float]:
        """The score of each tool of ``among`` (all when None), in order."""
    def rank(
        self, query: str, limit: int, among: list[int] | tuple[int, ...] | None = None,
        matched_only: bool = False,
    ) -> list[int]:
        """The places (into ``among``, or tool indices) of the best ``limit`` tools."""

def search_terms(text: str, camel: bool = False) -> list[str]:
    """The index terms of ``text`` (``camel``: also cut at camelCase, as names are)."""

def search_steps(text: str) -> list[str]:
    """A task's steps: cut at sentence ends and at the words "and" and "then"."""

def search_mentions_path(text: str) -> bool:
    """Whether ``text`` holds a file path (``/``, ``~/``, ``./``, ``../``, ``X:\\``)."""

def search_stopwords() -> list[str]:
    """The English stop words the tokenizer drops."""

def search_synonyms() -> list[str]:
    """The lexicon's groups of synonyms, one string of words each."""

def search_formats() -> list[str]:
    """The lexicon's file formats: an extension and its media type's words, one string each."""

class NamePatterns:
    """Name patterns (``*`` any run of characters, ``?`` one character, all
    else literal and case-sensitive); a name matches when any pattern does."""
    def __init__(self, patterns: Iterable[str]) -> None: ...
    def __len__(self) -> int: ...
    def is_match(self, name: str) -> bool: ...
    def matches(self, names: Iterable[str]) -> list[bool]: ...
