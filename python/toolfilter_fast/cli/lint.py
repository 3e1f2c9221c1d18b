"""``toolfilter lint``: what in a policy does nothing, or something else than
meant, on real catalogs; and assertions a CI job can hold a policy to.

Findings (warnings):

* ``unused``: a static pattern (glob, regex, annotations, CEL without
  ``ctx``) that matches no tool of the catalogs;
* ``loose-only``: an include pattern that matches no tool as written, but
  would under the loose fold (``github/*`` and a server ``GitHub``): include
  matches exactly;
* ``overridden``: a static include pattern every one of whose tools a static
  exclude pattern hides (exclude patterns are applied first, so it includes
  nothing on these catalogs): ``fs/*`` under ``{annotations =
  {destructiveHint = true}, trusted = ["github"]}``, which hides every tool of
  an untrusted server. The finding names the exclude patterns, each tool
  counted against the first that hides it; a dynamic exclude (CEL reading
  ``ctx``, a function) hides for some callers only, and is not counted;
* ``shadowed``: a static pattern every one of whose tools an earlier pattern
  of the same option already matches: it decides nothing on these catalogs.

Assertions (``--deny-visible RULE``, repeatable), each failing the run (exit
1) with the offending tools: no tool that the rule matches may be visible
under the whole policy for the ``--ctx``, ``--message`` and ``--focus`` given.
A rule is ``annotations: destructiveHint`` (hints, comma-separated, each
``hint`` or ``hint=false``; every server's hints believed), ``cel: EXPR``, or
a ``server/tool`` glob.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._tool import HINTS, Tool
from ..config import Config
from ..filter import ToolFilter
from ..filter.entries import Annotations, Cel
from ..filter.explain import Explainer, PatternRef
from ..policy import Policy
from ..policy.model import serving_order

__all__ = ["Finding", "deny_rule", "lint"]


@dataclass(frozen=True)
class Finding:
    """One thing lint found: ``kind`` (``unused``, ``loose-only``,
    ``overridden``, ``shadowed``, ``denied``), where (``filter.exclude[3]``,
    or the rule), and what."""

    kind: str
    where: str
    message: str
    tools: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "where": self.where, "message": self.message,
                "tools": list(self.tools)}


def deny_rule(text: str) -> ToolFilter:
    """A ``--deny-visible`` rule as a filter whose include is the rule (so its
    ``static_visible`` says whether the rule matches a tool); ValueError with
    what is wrong."""
    kind, colon, rest = text.partition(":")
    kind = kind.strip()
    if colon and kind == "annotations":
        hints: dict[str, bool] = {}
        for part in (p.strip() for p in rest.split(",")):
            key, equals, value = part.partition("=")
            key, value = key.strip(), value.strip().lower()
            if key not in HINTS:
                raise ValueError(f"unknown hint {key!r} (the hints are {', '.join(HINTS)})")
            if equals and value not in ("true", "false"):
                raise ValueError(f"{key}={value}: a hint is true or false")
            hints[key] = value != "false"
        return ToolFilter.compile(include=[Annotations(trusted=["*"], **hints)])
    if colon and kind == "cel":
        return ToolFilter.compile(include=[Cel(rest.strip())])
    if "/" not in text:
        raise ValueError("a rule is 'annotations: HINT[, HINT=false]', 'cel: EXPR' or a "
                         "'server/tool' glob")
    return ToolFilter.compile(include=[text])


def _matches(explainer: Explainer, option: str, tools: Sequence[Tool],
             loose: bool = False) -> list[tuple[PatternRef, set[int]]]:
    """Each static pattern of an option and the places of the tools it matches."""
    out = []
    for ref, test in explainer.static_patterns(option, loose=loose):
        out.append((ref, {i for i, tool in enumerate(tools) if test(tool)}))
    return sorted(out, key=lambda pair: pair[0].index)


def _label(tool: Tool) -> str:
    return f"{tool.server_id}/{tool.name}"


def _hiders(hit: set[int], excludes: list[tuple[PatternRef, set[int]]]) -> list[PatternRef]:
    """The exclude patterns that hide the tools of ``hit``, each tool counted
    against the first (lowest index) that matches it; empty when one of the
    tools is hidden by none."""
    used: list[PatternRef] = []
    for i in sorted(hit):
        first = next((ref for ref, hidden in excludes if i in hidden), None)
        if first is None:
            return []
        if first not in used:
            used.append(first)
    return sorted(used, key=lambda ref: ref.index)


def _overridden(ref: PatternRef, where: str, hit: set[int], hiders: list[PatternRef],
                tools: Sequence[Tool]) -> Finding:
    names = " and ".join(f"exclude[{h.index}] {h.source}" for h in hiders)
    verb = "hides" if len(hiders) == 1 else "hide"
    return Finding("overridden", where,
                   f"{ref.source} includes nothing: {names} {verb} every tool it matches "
                   f"({len(hit)}; exclude patterns are applied first)",
                   tuple(_label(tools[i]) for i in sorted(hit)))


def lint(config: Config, tools: Sequence[Tool], *, ctx: Any = None, message: str | None = None,
         focus: Any = None, deny: Sequence[tuple[str, ToolFilter]] = (),
         servers: Sequence[str] = ()) -> list[Finding]:
    """The findings of the config on the catalogs' tools, warnings first, then
    the failed assertions (the policy judging the tools in the gateway's
    order, servers as ``servers`` ranks them: :func:`serving_order`)."""
    explainer = Explainer(config.filter)
    findings: list[Finding] = []
    loose_include: dict[int, set[int]] | None = None
    excludes = _matches(explainer, "exclude", tools)
    for option in ("include", "exclude"):
        matched = _matches(explainer, option, tools) if option == "include" else excludes
        for position, (ref, hit) in enumerate(matched):
            where = f"filter.{option}[{ref.index}]"
            if not hit:
                if option == "include":
                    if loose_include is None:
                        loose_include = {r.index: h for r, h in
                                         _matches(explainer, "include", tools, loose=True)}
                    loose = loose_include.get(ref.index, set())
                    if loose:
                        names = tuple(_label(tools[i]) for i in sorted(loose))
                        findings.append(Finding(
                            "loose-only", where,
                            f"{ref.source} matches no tool as written, but {len(names)} loosely "
                            "(include matches exactly: case and '-', '.', '_' count)", names))
                        continue
                findings.append(Finding("unused", where,
                                        f"{ref.source} matches no tool of the catalogs"))
                continue
            hiders = _hiders(hit, excludes) if option == "include" else []
            if hiders:
                findings.append(_overridden(ref, where, hit, hiders, tools))
                continue
            for earlier, earlier_hit in matched[:position]:
                if hit <= earlier_hit:
                    findings.append(Finding(
                        "shadowed", where,
                        f"{ref.source} is shadowed by {option}[{earlier.index}] "
                        f"{earlier.source}: every tool it matches, that one matches too"))
                    break
    if deny:
        ordered = [tools[i] for i in serving_order(tools, servers)]
        selection = Policy.from_parts(config).select(ordered, ctx, message, focus)
        visible = {id(tool) for tool in selection.tools}
        for text, rule in deny:
            offenders = tuple(_label(t) for t in tools
                              if id(t) in visible and rule.static_visible(t))
            if offenders:
                findings.append(Finding(
                    "denied", text,
                    f"{len(offenders)} tool{'s' if len(offenders) != 1 else ''} that "
                    f"{text!r} matches {'are' if len(offenders) != 1 else 'is'} visible",
                    offenders))
    return findings
