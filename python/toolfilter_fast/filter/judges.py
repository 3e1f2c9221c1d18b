"""How the fast path reads a tool's hints and runs expression patterns.

Annotation patterns themselves are matched in the core (``rust/hints.rs``);
what Python needs is a tool's raw hint byte for objects the core does not
read in place, and, for expression (CEL) patterns, the ``tool`` value the
expression sees, built here and run by the core's CEL engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _core
from .._tool import HINTS, Tool, raw_hints
from .entries import Cel

__all__ = ["CelJudge", "SharedCtx", "TrustedServers", "effective_hints", "hints_of"]


def hints_of(tool: Any) -> int:
    """The raw hint byte of ``tool``: a ``Tool`` keeps it; any other object's
    ``annotations`` attribute is read (missing: no hints)."""
    if type(tool) is Tool:
        return tool._hints
    return raw_hints(getattr(tool, "annotations", None))


class TrustedServers:
    """The server globs of a ``trusted`` list, matched exactly. The globs are
    read as characters (``str.__str__``): a ``str`` subclass's ``__eq__``
    cannot make ``"*"`` of another glob."""

    __slots__ = ("_everyone", "_globs", "constant")

    def __init__(self, globs: tuple[str, ...]) -> None:
        texts = tuple(str.__str__(glob) for glob in globs)
        self._everyone = any(text == "*" for text in texts)
        self._globs = tuple(_core.SegmentGlob(text, False) for text in texts)
        #: The answer for every server when there is one (``*``, or no glob), else None.
        self.constant: bool | None = True if self._everyone else None if self._globs else False

    def __call__(self, server_id: str) -> bool:
        if self._everyone:
            return True
        for glob in self._globs:
            if glob.is_match(server_id):
                return True
        return False


def effective_hints(raw: int, trusted: bool) -> dict[str, bool]:
    """The four hints as a pattern sees them (see :class:`~toolfilter_fast.Annotations`)."""
    bits = _core.effective_hints(raw, trusted)
    return {key: bool(bits >> i & 1) for i, key in enumerate(HINTS)}


class CelJudge:
    """One compiled expression pattern. Called as a function pattern
    ``(tool, ctx) -> bool`` when it is dynamic (it raises when the expression
    gives no verdict, so that the caller fails closed), and through
    :meth:`verdict` when it is static.

    The ``tool`` an expression sees is read from the object by the core
    (``CelProgram.evaluate_tool``): ``server_id`` and ``name`` as given,
    ``title`` and ``description`` (a ``str``, else null), ``meta`` (a
    mapping, else null) and ``annotations`` (the effective hints of
    :func:`hints_of`). Every field is read, but only those the expression
    reads are converted; the others are checked as they would be."""

    __slots__ = ("_evaluate", "_trust", "entry", "program", "trusted")

    def __init__(self, entry: Cel, program: _core.CelProgram) -> None:
        self.entry = entry
        self.program = program
        self.trusted = TrustedServers(entry.trusted)
        self._trust = self.trusted.constant
        self._evaluate = program.evaluate_tool

    @property
    def dynamic(self) -> bool:
        return self.program.reads_ctx

    def verdict(
        self, tool: Any, server_id: str, name: str, ctx: Any,
    ) -> tuple[bool | None, str | None]:
        """``(verdict, None)``, or ``(None, why)`` when there is none. ``tool``
        may be None (a pair batch knows the two strings only): its other
        fields are then null."""
        trusted = self._trust
        if trusted is None:
            trusted = self.trusted(server_id)
        return self._evaluate(tool, server_id, name, trusted, ctx, hints_of)

    def __call__(self, tool: Any, ctx: Any) -> bool:
        server_id, name = tool.server_id, tool.name
        verdict, why = self.verdict(tool, server_id, name, ctx)
        if verdict is None:
            raise CelFailure(why or "no verdict")
        return verdict

    def judge_shared(self, tool: Any, shared: SharedCtx) -> bool:
        """:meth:`__call__` with the call's converted ``ctx``: raises
        :class:`CelFailure` (with the reason) when there is no verdict."""
        server_id, name = tool.server_id, tool.name
        verdict, why = self.verdict(tool, server_id, name, shared.value())
        if verdict is None:
            raise CelFailure(why or "no verdict")
        return verdict

    def call_shared(self, tool: Any, shared: SharedCtx) -> bool | None:
        """As a function pattern called by ``call_fail_closed``, with the
        call's ``ctx`` converted once (``shared``): the bool, or None when
        there is no verdict (reading the tool raised, too)."""
        try:
            server_id, name = tool.server_id, tool.name
            trusted = self._trust
            if trusted is None:
                trusted = self.trusted(server_id)
            value = shared._value
            if value is None:
                value = shared.value()
            return self._evaluate(tool, server_id, name, trusted, value, hints_of)[0]
        except Exception:
            return None

    def __repr__(self) -> str:
        return repr(self.entry)


class SharedCtx:
    """One call's ``ctx`` as the CEL engine reads it: converted on the first
    read by an expression, then lent to every expression of the call, for
    every tool (converting it per tool made a large ctx cost its size once a
    tool). Expressions thus see ``ctx`` as it was when the first of them read
    it. Given the call's ``programs``, only what they read of it is built
    (the rest is checked, so a ctx that cannot be converted still fails them
    all); without, all of it. Two threads of one batch may both convert it;
    either is right."""

    __slots__ = ("_ctx", "_programs", "_value")

    def __init__(self, ctx: Any, programs: tuple[_core.CelProgram, ...] | None = None) -> None:
        self._ctx = ctx
        self._programs = programs
        self._value: _core.CelValue | None = None

    def value(self) -> _core.CelValue:
        value = self._value
        if value is None:
            value = self._value = _core.CelValue(self._ctx, self._programs)
        return value


class CelFailure(Exception):
    """An expression pattern gave no verdict (it fails closed)."""


#: A static judge: ``(tool or None, server_id, name) -> matched``.
StaticJudge = Callable[[Any, str, str], bool]
