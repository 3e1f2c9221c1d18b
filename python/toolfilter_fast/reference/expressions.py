"""Annotation and expression patterns, spelled out in plain Python.

The reference reads a tool's hints, makes them effective and matches them
here, independently of the core's bit tables; and it runs CEL with
``cel-python`` (``celpy``), a second implementation of the language, so that
the property tests compare two engines, not one with itself. ``celpy`` is
imported when a filter with a CEL pattern is compiled:
``pip install 'toolfilter_fast[reference]'``.

Two of celpy's rules are not the language's, and the reference runs celpy
with both as the language defines them: its ``has(e.f)`` is true when
``e.f`` can be evaluated and false otherwise, where the language makes it an
error unless ``e`` is a map (``has(ctx.role)`` with ``ctx`` null); and it
makes ``ctx != null`` an error for a map ``ctx``, where values of different
types are simply not equal (``null`` equals only ``null``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import PatternError
from ..filter.entries import Annotations, Cel
from .text import glob_match, text_of

__all__ = ["CelExpression", "annotations_match", "effective_hints", "given_hints", "trusts"]

#: The four hints, and each one's value when it is missing or not believed.
DEFAULTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}

_MAX_DEPTH = 32


def given_hints(tool: Any) -> dict[str, bool]:
    """The hints the tool's server gave: ``tool.annotations`` read by key (a
    mapping) or by attribute (any other object); only a real ``bool`` counts."""
    annotations = getattr(tool, "annotations", None)
    if annotations is None:
        return {}
    given = {}
    for key in DEFAULTS:
        if isinstance(annotations, Mapping):
            value = annotations.get(key)
        else:
            value = getattr(annotations, key, None)
        if type(value) is bool:
            given[key] = value
    return given


def trusts(trusted: tuple[str, ...], server_id: str) -> bool:
    """Whether a glob of ``trusted`` matches the server id, exactly."""
    return any(glob_match(glob, server_id) for glob in trusted)


def effective_hints(tool: Any, server_id: str, trusted: tuple[str, ...]) -> dict[str, bool]:
    """The hints as a pattern trusting ``trusted`` sees them: missing ones (and
    all of an untrusted server's) take their defaults, and a read-only tool is
    neither destructive nor non-idempotent."""
    hints = dict(DEFAULTS)
    if trusts(trusted, server_id):
        hints.update(given_hints(tool))
    if hints["readOnlyHint"]:
        hints["destructiveHint"] = False
        hints["idempotentHint"] = True
    return hints


def annotations_match(entry: Annotations, tool: Any, server_id: str) -> bool:
    """Whether every hint the pattern names has the wanted effective value."""
    seen = effective_hints(tool, server_id, entry.trusted)
    return all(seen[key] == value for key, value in entry.hints.items())


class CelFailure(Exception):
    """An expression gave no bool verdict: it fails closed."""


def _cel_value(value: Any, depth: int) -> Any:
    """A Python value as a ``celpy`` value, by the rules the fast path keeps:
    None, bool, int, float, str, bytes, lists, tuples and mappings with str,
    bool or int keys; a lone surrogate, anything else, or more than 32 levels
    is a failure."""
    import celpy

    types = celpy.celtypes
    if depth > _MAX_DEPTH:
        raise CelFailure(f"a value nests deeper than {_MAX_DEPTH} levels")
    if value is None:
        return None
    if isinstance(value, bool):
        return types.BoolType(value)
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return types.IntType(value)
        if 0 <= value < 2**64:
            return types.UintType(value)
        raise CelFailure("an int out of CEL's range")
    if isinstance(value, float):
        return types.DoubleType(value)
    if isinstance(value, str):
        text = text_of(value)
        if any("\ud800" <= c <= "\udfff" for c in text):
            raise CelFailure("a string holds a lone surrogate")
        return types.StringType(text)
    if isinstance(value, bytes):
        return types.BytesType(value)
    if isinstance(value, (list, tuple)):
        return types.ListType([_cel_value(item, depth + 1) for item in value])
    if isinstance(value, Mapping):
        entries = {}
        for key, item in value.items():
            if isinstance(key, str):
                cel_key = _cel_value(key, depth + 1)
            elif isinstance(key, (bool, int)):
                cel_key = _cel_value(key, depth + 1)
            else:
                raise CelFailure(f"a map key of type {type(key).__name__}")
            entries[cel_key] = _cel_value(item, depth + 1)
        return types.MapType(entries)
    raise CelFailure(f"a {type(value).__name__}, which has no CEL value")


def _spec_runner() -> Any:
    """A celpy runner whose ``has()`` follows the language definition."""
    import celpy
    from celpy.evaluation import CELEvalError, Evaluator

    types = celpy.celtypes

    class SpecEvaluator(Evaluator):
        def macro_has_eval(self, exprlist: Any) -> Any:
            # The argument is one field selection e.f: find it down the tree's
            # chain of single children, evaluate e, and ask the map for f.
            node = exprlist.children[0]
            while getattr(node, "data", None) != "member_dot":
                children = getattr(node, "children", [])
                if len(children) != 1:
                    return CELEvalError("has() takes a field selection, e.f")
                node = children[0]
            operand, field = node.children
            value = self.visit(operand)
            if isinstance(value, CELEvalError):
                return value
            if isinstance(value, types.MapType):
                return types.BoolType(types.StringType(str(field)) in value)
            return CELEvalError(f"has() of a field of a {type(value).__name__}")

    class SpecRunner(celpy.InterpretedRunner):
        def evaluate(self, context: Any) -> Any:
            return SpecEvaluator(ast=self.ast, activation=self.new_activation()).evaluate(context)

    return SpecRunner


def _null_equality() -> dict[str, Any]:
    """``==`` and ``!=`` with ``null`` on either side: equal only to ``null``."""
    from celpy import celtypes
    from celpy.evaluation import bool_eq, bool_ne

    def equal(left: Any, right: Any) -> Any:
        if left is None or right is None:
            return celtypes.BoolType(left is None and right is None)
        return bool_eq(left, right)

    def not_equal(left: Any, right: Any) -> Any:
        if left is None or right is None:
            return celtypes.BoolType(not (left is None and right is None))
        return bool_ne(left, right)

    return {"_==_": equal, "_!=_": not_equal}


class CelExpression:
    """One CEL pattern compiled by ``celpy``."""

    def __init__(self, option: str, index: int, entry: Cel) -> None:
        try:
            import celpy
        except ImportError as err:  # pragma: no cover - the test extra installs it
            raise ImportError(
                "the reference runs CEL patterns with cel-python: "
                "pip install 'toolfilter_fast[reference]'"
            ) from err
        self.entry = entry
        environment = celpy.Environment(runner_class=_spec_runner())
        try:
            tree = environment.compile(entry.source)
        except Exception as err:  # celpy's parse errors have no common base of their own
            raise PatternError(
                f"{option}[{index}]: invalid CEL expression ({err}): {entry!r}",
                option=option, index=index, entry=entry,
            ) from None
        self.program = environment.program(tree, functions=_null_equality())
        # It reads ctx when the identifier ctx stands as a variable (not as
        # a field after a dot, which the grammar keeps apart).
        self.dynamic = any(
            node.data == "ident" and node.children and str(node.children[0]) == "ctx"
            for node in tree.iter_subtrees()
        )

    def verdict(self, tool: Any, server_id: str, name: str, ctx: Any) -> bool:
        """The expression's bool, or CelFailure when it gives none."""
        import celpy

        trusted = self.entry.trusted
        value = {
            "server_id": server_id,
            "name": name,
            "title": _str_or_none(getattr(tool, "title", None)),
            "description": _str_or_none(getattr(tool, "description", None)),
            "annotations": effective_hints(tool, server_id, trusted),
            "meta": _mapping_or_none(getattr(tool, "meta", None)),
        }
        activation = {"tool": _cel_value(value, 0), "ctx": _cel_value(ctx, 0)}
        try:
            result = self.program.evaluate(activation)
        except Exception as err:
            raise CelFailure(f"the expression failed: {err}") from None
        if not isinstance(result, celpy.celtypes.BoolType):
            raise CelFailure(f"the expression gave a {type(result).__name__}, not a bool")
        return bool(result)

    def __call__(self, tool: Any, ctx: Any) -> bool:
        """As a function pattern (dynamic): raises when there is no verdict."""
        return self.verdict(tool, text_of(tool.server_id), text_of(tool.name), ctx)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _mapping_or_none(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None
