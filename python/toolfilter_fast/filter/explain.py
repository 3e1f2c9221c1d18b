"""Why is a tool visible or hidden? The audit trail of one ``visible`` decision.

:func:`explain` replays :meth:`ToolFilter.visible` step by step and reports the
step and the pattern that decided, every function pattern it called and how
that call went, and the loose-folded forms that exclude patterns compare.

It is built only from what a filter shows of itself (``f.include`` and
``f.exclude``, the patterns as written), the shared classifier
(:func:`~toolfilter_fast.filter.patterns.parse_options`,
:func:`~toolfilter_fast.filter.patterns.call_fail_closed`) and the core's one-pattern
primitives, so it cannot drift with the filter's internals; the property tests
check that it always agrees with ``visible`` and calls the same functions in
the same order.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import _core
from .._tool import HINTS, _pair
from .entries import CEL_MAX_COST, Annotations, Cel
from .judges import CelJudge, SharedCtx, TrustedServers, effective_hints, hints_of
from .patterns import (
    AnnotationPattern,
    CelPattern,
    FunctionPattern,
    Parsed,
    RegexPattern,
    StringPattern,
    call_fail_closed,
    cel_error,
    parse_options,
)

__all__ = ["STEPS", "Call", "Decision", "Explainer", "PatternRef", "describe_pattern", "explain"]

#: The step of ``visible`` that settled a decision, in the order ``visible`` works.
STEPS = (
    "static_exclude",    # a static exclude pattern matched: hidden
    "exclude_callable",  # an exclude function returned True, raised or returned a non-bool: hidden
    "include_empty",     # nothing excluded and include is empty: visible
    "static_include",    # a static include pattern matched: visible
    "include_callable",  # an include function returned True: visible
    "no_include_match",  # include is not empty and nothing in it matched: hidden
)

_FLAG_LETTERS = (("a", re.ASCII), ("i", re.IGNORECASE), ("m", re.MULTILINE),
                 ("s", re.DOTALL), ("x", re.VERBOSE))
_RETURNED_MAX = 200


def regex_flag_letters(regex: re.Pattern[str]) -> str:
    """The flags of a compiled regex as config letters (``"i"``, ``"ms"``, ...)."""
    return "".join(letter for letter, flag in _FLAG_LETTERS if regex.flags & flag)


def callable_path(fn: Any) -> str:
    """``"module:qualname"`` for an importable function, else its ``repr``."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        return f"{module}:{qualname}"
    return repr(fn)


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _trusted_tail(trusted: tuple[str, ...]) -> str:
    if trusted == ("*",):
        return ""
    return f", trusted = [{', '.join(_quote(glob) for glob in trusted)}]"


def describe_pattern(entry: Any) -> str:
    """A pattern in the notation of a config file: ``"github/*"``,
    ``{server = "*", regex = "^drop_", flags = "i"}``, ``{callable = "app.rules:fn"}``,
    ``{annotations = {readOnlyHint = true}}``, ``{cel = "tool.name == 'x'"}``."""
    if isinstance(entry, str):
        return _quote(entry)
    if isinstance(entry, Annotations):
        hints = ", ".join(f"{key} = {'true' if value else 'false'}"
                          for key, value in entry.hints.items())
        return f"{{annotations = {{{hints}}}{_trusted_tail(entry.trusted)}}}"
    if isinstance(entry, Cel):
        cost = "" if entry.max_cost == CEL_MAX_COST else f", max_cost = {entry.max_cost}"
        return f"{{cel = {_quote(entry.source)}{_trusted_tail(entry.trusted)}{cost}}}"
    if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], re.Pattern):
        server_glob, regex = entry
        flags = regex_flag_letters(regex)
        tail = f", flags = {_quote(flags)}" if flags else ""
        return f"{{server = {_quote(server_glob)}, regex = {_quote(regex.pattern)}{tail}}}"
    if callable(entry):
        return f"{{callable = {_quote(callable_path(entry))}}}"
    return repr(entry)


@dataclass(frozen=True)
class PatternRef:
    """One pattern of a filter: where it sits and what it says.

    ``kind`` is ``"string"``, ``"regex"``, ``"callable"``, ``"annotations"`` or
    ``"cel"``; ``source`` is the
    pattern in config notation (:func:`describe_pattern`). ``loose`` is True
    for exclude patterns; ``folded`` is then the loose-folded string pattern
    that was actually matched (exclude string patterns only).
    """

    option: str
    index: int
    kind: str
    source: str
    loose: bool
    server_glob: str | None = None
    tool_glob: str | None = None
    folded: str | None = None
    regex: str | None = None
    flags: str | None = None

    def label(self) -> str:
        return f"{self.option}[{self.index}] {self.source}"

    def to_dict(self) -> dict[str, Any]:
        return dict(self._as_dict)

    @functools.cached_property
    def _as_dict(self) -> dict[str, Any]:
        # One pattern decides for many tools: build its dict once.
        return {
            "option": self.option, "index": self.index, "kind": self.kind,
            "source": self.source, "loose": self.loose, "server_glob": self.server_glob,
            "tool_glob": self.tool_glob, "folded": self.folded, "regex": self.regex,
            "flags": self.flags,
        }


@dataclass(frozen=True)
class Call:
    """One call of a function pattern, as ``visible`` made it.

    ``outcome`` is ``"true"``, ``"false"``, ``"raised"`` (``error_type`` and
    ``error_message`` say what) or ``"non_bool"`` (``returned`` is the value's
    ``repr``, cut to 200 characters). ``matched`` is how the filter counted it:
    a raise or a non-bool matches for exclude (hides) and does not match for
    include (fail closed).
    """

    pattern: PatternRef
    outcome: str
    matched: bool
    error_type: str | None = None
    error_message: str | None = None
    returned: str | None = None

    def describe(self) -> str:
        if self.outcome == "raised":
            what = f"raised {self.error_type}: {self.error_message}"
        elif self.outcome == "non_bool":
            what = f"returned a non-bool {self.returned}"
        else:
            what = f"returned {self.outcome.capitalize()}"
        if self.outcome in ("raised", "non_bool"):
            what += " (fails closed: counts as " + ("a match" if self.matched else "no match") + ")"
        return f"{self.pattern.label()} {what}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern.to_dict(), "outcome": self.outcome, "matched": self.matched,
            "error_type": self.error_type, "error_message": self.error_message,
            "returned": self.returned,
        }


@dataclass(frozen=True)
class Decision:
    """Whether a tool is visible, and why.

    ``step`` is one of :data:`STEPS`; ``pattern`` the pattern that decided
    (None for ``include_empty`` and ``no_include_match``); ``matched_on`` says
    which form of the target a static pattern hit: ``"raw"`` (it matches as
    written, on the name as given) or ``"folded"`` (an exclude pattern that
    only matches under the loose fold: ``*/delete_repo`` on ``Delete-Repo``). ``calls``
    lists every function pattern called, in order. ``folded_server_id`` and
    ``folded_name`` are the loose forms exclude patterns are matched against.
    ``static_visible`` is what :meth:`ToolFilter.static_visible` says (the
    refresh-time view; False means the tool is never even stored by a catalog).
    ``near_miss``, for ``no_include_match`` only, is the first include pattern
    that would have matched under the loose fold (``github/*`` for server
    ``GitHub``): the usual reason a tool an operator expected has gone missing.
    ``hints`` are the annotation hints the tool's server gave (real bools
    only). When an annotation or expression pattern decided, ``trusted`` says
    whether it believed the server's hints and ``effective_hints`` what it saw
    (the defaults, the worst case, for an untrusted server); ``detail`` says
    why an expression gave no verdict (it then failed closed).
    """

    server_id: str
    name: str
    visible: bool
    static_visible: bool
    step: str
    pattern: PatternRef | None
    matched_on: str | None
    calls: tuple[Call, ...]
    folded_server_id: str
    folded_name: str
    include_count: int
    near_miss: PatternRef | None = None
    hints: dict[str, bool] | None = None
    trusted: bool | None = None
    effective_hints: dict[str, bool] | None = None
    detail: str | None = None

    @property
    def why(self) -> str:
        """What decided, in one sentence without the verdict."""
        p = self.pattern
        if self.matched_on == "failed" and p is not None:
            return f"{p.label()} gave no verdict ({self.detail}): it fails closed"
        if p is not None and p.kind == "annotations" and self.effective_hints is not None:
            seen = ", ".join(f"{k}={'true' if v else 'false'}"
                             for k, v in self.effective_hints.items())
            trust = "trusted" if self.trusted else "not trusted: every hint is its default"
            return f"{p.label()} matches (server {trust}; effective hints {seen})"
        if self.step == "static_exclude" and p is not None:
            if self.matched_on == "folded":
                return (f"{p.label()} matches (loose: server {_quote(self.folded_server_id)}, "
                        f"name {_quote(self.folded_name)})")
            return f"{p.label()} matches"
        if self.step in ("exclude_callable", "include_callable") and self.calls:
            return self.calls[-1].describe()
        if self.step == "include_empty":
            return "no exclude pattern matches and include is empty"
        if self.step == "static_include" and p is not None:
            return f"{p.label()} matches"
        failed = [c.describe() for c in self.calls if c.outcome != "false"]
        tail = f"; {'; '.join(failed)}" if failed else ""
        count = self.include_count
        if self.near_miss is not None:
            tail += (f"; {self.near_miss.label()} would match loosely, but include "
                     "matches exactly (case and '-', '.', '_' count)")
        return f"matches none of the {count} include pattern{'' if count == 1 else 's'}{tail}"

    @property
    def reason(self) -> str:
        """The verdict and :attr:`why`: ``"hidden: exclude[0] "*/delete_*" matches ..."``."""
        return f"{'visible' if self.visible else 'hidden'}: {self.why}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (stable keys; None where a field does not apply)."""
        return {
            "server_id": self.server_id, "name": self.name, "visible": self.visible,
            "static_visible": self.static_visible, "step": self.step, "reason": self.reason,
            "pattern": None if self.pattern is None else self.pattern.to_dict(),
            "matched_on": self.matched_on, "calls": [c.to_dict() for c in self.calls],
            "near_miss": None if self.near_miss is None else self.near_miss.to_dict(),
            "folded": {"server_id": self.folded_server_id, "name": self.folded_name},
            "hints": self.hints, "trusted": self.trusted,
            "effective_hints": self.effective_hints, "detail": self.detail,
        }


def _split(text: str) -> tuple[str, str]:
    server, slash, tool = text.partition("/")
    return (server, tool) if slash else ("*", text)


@dataclass(frozen=True)
class _Target:
    """What static matchers look at: the tool (None for a bare pair), its two
    strings, the folded name and its raw hints."""

    tool: Any
    server_id: str
    name: str
    folded_name: str
    hints: int


# A static matcher says what it hit: "raw", "folded", "failed" (an expression
# that gave no verdict, counted as a match for exclude) or None; and, when an
# annotation or expression pattern hit, what it saw: (trusted, effective hints,
# why it failed).
_Seen = tuple[bool, dict[str, bool], "str | None"]
_Matcher = Callable[[_Target], "tuple[str | None, _Seen | None]"]


def _string_matcher(text: str, loose: bool) -> _Matcher:
    exact = _core.RuleSet([text], False)
    folded = _core.RuleSet([text], True) if loose else None

    def match(target: _Target) -> tuple[str | None, _Seen | None]:
        # "raw" when the pattern matches as written; "folded" when only the
        # loose fold makes it match (what an operator needs to know).
        if exact.is_match(target.server_id, target.name):
            return "raw", None
        if folded is not None and folded.is_match(target.server_id, target.name):
            return "folded", None
        return None, None
    return match


def _regex_matcher(server_glob: str, regex: re.Pattern[str], loose: bool) -> _Matcher:
    server = _core.SegmentGlob(server_glob, loose)

    def match(target: _Target) -> tuple[str | None, _Seen | None]:
        if not server.is_match(target.server_id):
            return None, None
        if regex.search(target.name) is not None:
            return "raw", None
        if loose and regex.search(target.folded_name) is not None:
            return "folded", None
        return None, None
    return match


def _annotations_matcher(entry: Annotations) -> _Matcher:
    trusted_servers = TrustedServers(entry.trusted)
    wanted = entry.hints

    def match(target: _Target) -> tuple[str | None, _Seen | None]:
        trusted = trusted_servers(target.server_id)
        seen = effective_hints(target.hints, trusted)
        hit = all(seen[key] == value for key, value in wanted.items())
        return ("raw" if hit else None), (trusted, seen, None)
    return match


def _cel_matcher(judge: CelJudge, loose: bool) -> _Matcher:
    def match(target: _Target) -> tuple[str | None, _Seen | None]:
        trusted = judge.trusted(target.server_id)
        verdict, why = judge.verdict(target.tool, target.server_id, target.name, None)
        seen = (trusted, effective_hints(target.hints, trusted), why)
        if verdict is None:
            return ("failed" if loose else None), seen
        return ("raw" if verdict else None), seen
    return match


class _Side:
    """One option's patterns, each with its own matcher, for attribution."""

    def __init__(
        self, option: str, parsed: list[Parsed], source: Sequence[Any], loose: bool | None = None,
    ) -> None:
        self.option = option
        self.loose = option == "exclude" if loose is None else loose
        self.count = len(parsed)
        self.statics: list[tuple[PatternRef, _Matcher]] = []
        self.fns: list[tuple[PatternRef, Callable[[Any, Any], Any]]] = []
        strings: list[str] = []
        for p in parsed:
            ref = self._ref(p, source[p.index])
            if isinstance(p, StringPattern):
                self.statics.append((ref, _string_matcher(p.text, self.loose)))
                strings.append(p.text)
            elif isinstance(p, RegexPattern):
                self.statics.append((ref, _regex_matcher(p.server_glob, p.regex, self.loose)))
            elif isinstance(p, AnnotationPattern):
                self.statics.append((ref, _annotations_matcher(p.entry)))
            elif isinstance(p, CelPattern):
                try:
                    judge = CelJudge(p.entry, _core.CelProgram(p.entry.source, p.entry.max_cost))
                except ValueError as err:
                    raise cel_error(option, p.index, p.entry, str(err)) from None
                if judge.dynamic:
                    self.fns.append((ref, judge))
                else:
                    self.statics.append((ref, _cel_matcher(judge, self.loose)))
            else:
                self.fns.append((ref, p.fn))
        # Blocks of string patterns, each one RuleSet: a tool that no pattern
        # matches costs one core call a block, and attributing a hit costs one
        # block scan, instead of a core call per pattern on big filters.
        self.strings = [(r, m) for r, m in self.statics if r.kind == "string"]
        # Regexes, annotation and static expression patterns: tried one by one.
        self.regexes = [(r, m) for r, m in self.statics if r.kind != "string"]
        size = max(16, math.isqrt(len(strings)))
        self.blocks = [
            _core.RuleSet(strings[i:i + size], self.loose) for i in range(0, len(strings), size)
        ]
        self.block_size = size

    def _ref(self, p: Parsed, entry: Any) -> PatternRef:
        source = describe_pattern(entry)
        if isinstance(p, StringPattern):
            server_glob, tool_glob = _split(p.text)
            folded = _core.fold_loose(p.text) if self.loose else None
            return PatternRef(self.option, p.index, "string", source, self.loose,
                              server_glob=server_glob, tool_glob=tool_glob, folded=folded)
        if isinstance(p, RegexPattern):
            return PatternRef(self.option, p.index, "regex", source, self.loose,
                              server_glob=p.server_glob, regex=p.regex.pattern,
                              flags=regex_flag_letters(p.regex))
        if isinstance(p, AnnotationPattern):
            return PatternRef(self.option, p.index, "annotations", source, self.loose)
        if isinstance(p, CelPattern):
            return PatternRef(self.option, p.index, "cel", source, self.loose)
        assert isinstance(p, FunctionPattern)
        return PatternRef(self.option, p.index, "callable", source, self.loose)

    def static_match(self, target: _Target) -> tuple[PatternRef, str, _Seen | None] | None:
        """The lowest-index static pattern that matches, on what, and what an
        annotation or expression pattern saw."""
        string_hit = None
        for block, rules in enumerate(self.blocks):
            if rules.is_match(target.server_id, target.name):
                # The first block with a match holds the first string pattern that matches.
                start = block * self.block_size
                for ref, matcher in self.strings[start:start + self.block_size]:
                    hit, _ = matcher(target)
                    if hit is not None:
                        string_hit = (ref, hit, None)
                        break
                break
        limit = string_hit[0].index if string_hit is not None else math.inf
        for ref, matcher in self.regexes:
            if ref.index > limit:
                break
            hit, seen = matcher(target)
            if hit is not None:
                return ref, hit, seen
        return string_hit


def _safe_text(show: Callable[[Any], str], value: Any) -> str:
    """``str``/``repr`` of a value from user code, which may itself raise."""
    try:
        return show(value)
    except Exception as err:
        return f"<{type(value).__name__} whose {show.__name__}() raised {type(err).__name__}>"


def _call(ref: PatternRef, fn: Callable[[Any, Any], Any], tool: Any, ctx: Any,
          shared: SharedCtx) -> Call:
    """Calls ``fn`` through :func:`call_fail_closed` (so the fail-closed rule is
    the filter's own) and watches what it raised or returned. An expression
    reads the call's ``ctx`` as ``shared`` converted it, as ``visible`` does."""
    seen: dict[str, Any] = {}

    def watched(tool: Any, ctx: Any) -> Any:
        try:
            result = fn.judge_shared(tool, shared) if type(fn) is CelJudge else fn(tool, ctx)
        except Exception as err:
            # Keep text, not the exception: its traceback would tie up frames.
            seen["error"] = (type(err).__name__, _safe_text(str, err))
            raise
        seen["result"] = result
        return result

    verdict = call_fail_closed(watched, tool, ctx)
    exclude = ref.option == "exclude"
    if verdict is not None:
        return Call(ref, "true" if verdict else "false", verdict)
    if "error" in seen:
        error_type, message = seen["error"]
        return Call(ref, "raised", exclude, error_type=error_type, error_message=message)
    returned = _safe_text(repr, seen.get("result"))
    if len(returned) > _RETURNED_MAX:
        returned = returned[:_RETURNED_MAX - 3] + "..."
    return Call(ref, "non_bool", exclude, returned=returned)


class Explainer:
    """Explains many tools against one filter (the per-pattern matchers are
    built once). ``Explainer(f).explain(tool, ctx)`` equals ``explain(f, tool, ctx)``."""

    def __init__(self, tool_filter: Any) -> None:
        include, exclude = tuple(tool_filter.include), tuple(tool_filter.exclude)
        parsed = parse_options({"include": include, "exclude": exclude})
        self._include = _Side("include", parsed["include"], include)
        self._exclude = _Side("exclude", parsed["exclude"], exclude)
        # The include patterns matched loosely: only to point out a near miss.
        self._include_loose: _Side | None = None
        self._include_parsed, self._include_source = parsed["include"], include

    def static_patterns(
        self, option: str, *, loose: bool = False,
    ) -> list[tuple[PatternRef, Callable[[Any], bool]]]:
        """Each static pattern of ``option`` (``"include"`` or ``"exclude"``)
        with a test ``tool -> bool``: whether it matches the tool as
        :meth:`ToolFilter.visible` sees it (an expression that gives no
        verdict does not match here). ``loose=True`` matches include patterns
        as if they were loose: what a lint looks for."""
        if option == "exclude":
            side = self._exclude
        elif loose:
            side = self._loose_include()
        else:
            side = self._include

        def test(matcher: _Matcher) -> Callable[[Any], bool]:
            def matches(tool: Any) -> bool:
                server_id, name = _pair(tool)
                target = _Target(tool, server_id, name, _core.fold_loose(name), hints_of(tool))
                return matcher(target)[0] in ("raw", "folded")
            return matches

        return [(ref, test(matcher)) for ref, matcher in side.statics]

    def _loose_include(self) -> _Side:
        if self._include_loose is None:
            self._include_loose = _Side(
                "include", self._include_parsed, self._include_source, loose=True,
            )
        return self._include_loose

    def _near_miss(self, target: _Target) -> PatternRef | None:
        hit = self._loose_include().static_match(target)
        if hit is None:
            return None
        ref = hit[0]
        return next(r for r, _ in self._include.statics if r.index == ref.index)

    def explain(self, tool: Any, ctx: Any = None) -> Decision:
        """The decision :meth:`ToolFilter.visible` takes for ``(tool, ctx)``, with its reasons.

        Works in ``visible``'s order and calls the same function patterns in the
        same order with the same arguments, and no others.
        """
        return self.explain_shared(tool, ctx, SharedCtx(ctx))

    def explain_shared(self, tool: Any, ctx: Any, shared: SharedCtx) -> Decision:
        """:meth:`explain`, the expressions reading ``ctx`` as ``shared`` holds
        it: one conversion for the many tools of one call (a selection's
        reasons)."""
        server_id, name = _pair(tool)
        folded = (_core.fold_loose(server_id), _core.fold_loose(name))
        raw = hints_of(tool)
        target = _Target(tool, server_id, name, folded[1], raw)
        given = {key: bool(raw >> (2 * i) & 2) for i, key in enumerate(HINTS)
                 if raw >> (2 * i) & 3}
        include, exclude = self._include, self._exclude
        calls: list[Call] = []

        def decide(visible: bool, step: str, static_visible: bool,
                   hit: tuple[PatternRef, str | None, _Seen | None] | None = None,
                   near_miss: PatternRef | None = None) -> Decision:
            pattern, matched_on, seen = hit if hit is not None else (None, None, None)
            trusted, effective, detail = seen if seen is not None else (None, None, None)
            return Decision(server_id, name, visible, static_visible, step, pattern, matched_on,
                            tuple(calls), *folded, include.count, near_miss, given, trusted,
                            effective, detail)

        hit = exclude.static_match(target)
        if hit is not None:
            return decide(False, "static_exclude", False, hit)
        include_hit = include.static_match(target) if include.count else None
        if include.count and include_hit is None and not include.fns:
            # The static patterns decided: visible calls no function here.
            return decide(False, "no_include_match", False, near_miss=self._near_miss(target))
        for ref, fn in exclude.fns:
            call = _call(ref, fn, tool, ctx, shared)
            calls.append(call)
            if call.matched:
                # static_visible did not look at this function: it kept the tool.
                return decide(False, "exclude_callable", True, (ref, None, None))
        if include.count == 0:
            return decide(True, "include_empty", True)
        if include_hit is not None:
            return decide(True, "static_include", True, include_hit)
        for ref, fn in include.fns:
            call = _call(ref, fn, tool, ctx, shared)
            calls.append(call)
            if call.matched:
                return decide(True, "include_callable", True, (ref, None, None))
        return decide(False, "no_include_match", bool(include.fns),
                      near_miss=self._near_miss(target))


def explain(tool_filter: Any, tool: Any, ctx: Any = None) -> Decision:
    """Why ``tool_filter.visible(tool, ctx)`` says what it says: a :class:`Decision`.

    ``explain(f, t, ctx).visible == f.visible(t, ctx)`` always, and the function
    patterns are called exactly as ``visible`` calls them. To explain many tools
    against one filter, build an :class:`Explainer` once.
    """
    return Explainer(tool_filter).explain(tool, ctx)
