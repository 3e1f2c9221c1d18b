"""Pattern entries that are neither globs, regexes nor functions: annotation
patterns and expression (CEL) patterns.

Both are plain data, shared by the fast path and the reference, which each
match them in their own way (the Rust core and the ``cel`` crate; plain
Python and the reference's own CEL evaluator).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._tool import HINTS

__all__ = ["CEL_MAX_COST", "Annotations", "Cel", "check_max_cost", "check_trusted"]

_HINT_LIST = ", ".join(HINTS)


def check_trusted(trusted: Any, what: str) -> tuple[str, ...]:
    """``trusted`` as a tuple of server globs: a list or tuple of non-empty
    ``str`` globs without ``/`` or ``:`` (the server-segment rules); TypeError
    or ValueError naming ``what`` otherwise. The globs kept are exact ``str``
    copies of the characters (``str.__str__``): a ``str`` subclass's own
    ``__eq__``, ``__hash__`` or ``__contains__`` is never called later, when
    a server is matched against them."""
    if isinstance(trusted, (str, bytes)) or not isinstance(trusted, Iterable):
        raise TypeError(f"{what}: trusted must be a list of server globs, not "
                        f"{type(trusted).__name__}")
    globs = []
    for glob in tuple(trusted):
        if not isinstance(glob, str):
            raise TypeError(f"{what}: trusted server globs must be str, not {type(glob).__name__}")
        glob_text = str.__str__(glob)
        if glob_text == "" or "/" in glob_text or ":" in glob_text:
            raise ValueError(
                f"{what}: {glob_text!r} is not a server glob (non-empty, no '/' or ':')")
        globs.append(glob_text)
    return tuple(globs)


#: The cost budget of a :class:`Cel` pattern that names none: comprehension
#: body runs per evaluation (the core's ``DEFAULT_MAX_COST``).
CEL_MAX_COST = 100_000


def check_max_cost(max_cost: Any, what: str) -> int:
    """``max_cost`` as a positive int (None: :data:`CEL_MAX_COST`); TypeError
    or ValueError naming ``what`` otherwise. Only an exact ``int`` is taken
    (never a ``bool``, never a subclass whose methods would decide)."""
    if max_cost is None:
        return CEL_MAX_COST
    if type(max_cost) is not int:
        raise TypeError(f"{what}: max_cost must be an int, not {type(max_cost).__name__}")
    if not 0 < max_cost < 1 << 64:
        raise ValueError(f"{what}: max_cost must be a positive int below 2**64, not {max_cost}")
    return max_cost


class Annotations:
    """An annotation pattern: matches a tool whose *effective* MCP hints equal
    every hint given. ``Annotations(readOnlyHint=True)``,
    ``Annotations(destructiveHint=True, trusted=["github", "internal-*"])``.

    The effective value of a hint follows the MCP schema: a missing hint (or
    one that is not a real ``bool``) takes its default, ``readOnlyHint``
    False, ``destructiveHint`` True, ``idempotentHint`` False,
    ``openWorldHint`` True; a read-only tool is neither destructive nor
    non-idempotent (those two mean something only when ``readOnlyHint`` is
    False). Clients must not base decisions on hints from servers they do not
    trust: for a server that no glob of ``trusted`` matches (exactly, case
    and separators counting), every hint takes its default, the worst case.
    ``trusted`` defaults to ``["*"]``, every server.

    Static: it depends on the tool alone, so refresh-time filtering,
    ``static_visible`` and the batches apply it.
    """

    __slots__ = ("_hints", "_trusted")

    _hints: tuple[tuple[str, bool], ...]
    _trusted: tuple[str, ...]

    def __init__(self, *, trusted: Iterable[str] = ("*",), **hints: bool) -> None:
        if not hints:
            raise ValueError(f"Annotations needs at least one hint ({_HINT_LIST})")
        for key, value in hints.items():
            if key not in HINTS:
                raise ValueError(f"Annotations: unknown hint {key!r} (the hints are {_HINT_LIST})")
            if not isinstance(value, bool):
                raise TypeError(f"Annotations: {key} must be True or False, not "
                                f"{type(value).__name__}")
        ordered = tuple((key, hints[key]) for key in HINTS if key in hints)
        object.__setattr__(self, "_hints", ordered)
        object.__setattr__(self, "_trusted", check_trusted(trusted, "Annotations"))

    @property
    def hints(self) -> dict[str, bool]:
        """The hints wanted, by name."""
        return dict(self._hints)

    @property
    def trusted(self) -> tuple[str, ...]:
        """The server globs whose hints are believed."""
        return self._trusted

    def want(self) -> tuple[bool | None, bool | None, bool | None, bool | None]:
        """The wanted value of each of the four hints, in their order (None: any)."""
        wanted = dict(self._hints)
        a, b, c, d = (wanted.get(key) for key in HINTS)
        return a, b, c, d

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Annotations is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Annotations):
            return NotImplemented
        return (self._hints, self._trusted) == (other._hints, other._trusted)

    def __hash__(self) -> int:
        return hash((Annotations, self._hints, self._trusted))

    def __repr__(self) -> str:
        hints = ", ".join(f"{key}={value!r}" for key, value in self._hints)
        return f"Annotations({hints}, trusted={list(self._trusted)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_annotations, (dict(self._hints), list(self._trusted)))


def _annotations(hints: dict[str, bool], trusted: list[str]) -> Annotations:
    return Annotations(trusted=trusted, **hints)


class Cel:
    """An expression pattern in the Common Expression Language:
    ``Cel('tool.annotations.readOnlyHint && !tool.name.startsWith("admin_")')``.

    The expression sees ``tool``, a map of ``server_id``, ``name``, ``title``
    and ``description`` (strings, or null), ``annotations`` (the four hints,
    effective as :class:`Annotations` makes them, for the servers ``trusted``
    matches) and ``meta`` (the tool's ``_meta`` map, or null); and ``ctx``,
    the caller's context (a map, or null). It must give a ``bool``. An
    expression that reads ``ctx`` is dynamic, decided per call like a
    function pattern; one that does not is static. An error, a value that is
    not a ``bool``, or a field that CEL cannot hold (a string with a lone
    surrogate, an object that is no map, list or scalar) fails closed as a
    function pattern does: the tool is hidden by an exclude pattern and not
    shown by an include one.

    ``max_cost`` (default :data:`CEL_MAX_COST`, 100,000) bounds the runs of
    comprehension bodies (``all``, ``exists``, ``exists_one``, ``map``,
    ``filter``, one per element): an expression whose compile-time estimate
    passes it is refused when the filter is compiled (a ``PatternError``), and
    an evaluation that passes it is stopped and fails closed. See
    docs/policy.md, "CEL cost".
    """

    __slots__ = ("_max_cost", "_source", "_trusted")

    _source: str
    _trusted: tuple[str, ...]
    _max_cost: int

    def __init__(self, source: str, *, trusted: Iterable[str] = ("*",),
                 max_cost: int | None = None) -> None:
        if not isinstance(source, str):
            raise TypeError(f"Cel: the expression must be str, not {type(source).__name__}")
        object.__setattr__(self, "_source", str.__str__(source))
        object.__setattr__(self, "_trusted", check_trusted(trusted, "Cel"))
        object.__setattr__(self, "_max_cost", check_max_cost(max_cost, "Cel"))

    @property
    def source(self) -> str:
        """The expression as written."""
        return self._source

    @property
    def trusted(self) -> tuple[str, ...]:
        """The server globs whose hints the expression's ``tool.annotations`` believes."""
        return self._trusted

    @property
    def max_cost(self) -> int:
        """The cost budget: comprehension body runs per evaluation."""
        return self._max_cost

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Cel is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cel):
            return NotImplemented
        return ((self._source, self._trusted, self._max_cost)
                == (other._source, other._trusted, other._max_cost))

    def __hash__(self) -> int:
        return hash((Cel, self._source, self._trusted, self._max_cost))

    def __repr__(self) -> str:
        tail = "" if self._trusted == ("*",) else f", trusted={list(self._trusted)!r}"
        if self._max_cost != CEL_MAX_COST:
            tail += f", max_cost={self._max_cost}"
        return f"Cel({self._source!r}{tail})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_cel, (self._source, list(self._trusted), self._max_cost))


def _cel(source: str, trusted: list[str], max_cost: int = CEL_MAX_COST) -> Cel:
    return Cel(source, trusted=trusted, max_cost=max_cost)
