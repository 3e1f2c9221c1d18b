"""The fast path's CEL patterns (the core's engine, ``rust/expr.rs``): the cost
budget, ``matches()`` with RE2's meaning, the call's ``ctx`` converted once,
``trusted`` read as characters, and errors on one line.

These check the fast path only: the reference's CEL engine is tested against
the same rules where it implements them (docs/policy.md, "CEL patterns").
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import Cel, ConfigError, PatternError, Policy, Tool, ToolFilter, _core
from toolfilter_fast.cli import main
from toolfilter_fast.filter.entries import CEL_MAX_COST
from toolfilter_fast.filter.explain import describe_pattern

# --- item 8: the cost budget -------------------------------------------------------

LIST = "[" + ",".join(["1"] * 200) + "]"


def four_nested_exists(items: str) -> str:
    """The issue's hostile expression: four nested ``exists`` over ``items``
    (over the 200-element literal, some 1.7 KB and 1.6 billion body runs)."""
    return (f"{items}.exists(a, {items}.exists(b, {items}.exists(c, "
            f"{items}.exists(d, a + b + c + d < 0))))")


def test_the_nested_exists_of_the_issue_is_refused_at_compile_time():
    hostile = four_nested_exists(LIST)
    assert 1600 < len(hostile) < 1800
    for option in ("include", "exclude"):
        with pytest.raises(PatternError) as raised:
            toolfilter_fast.compile(**{option: [Cel(hostile)]})
        message = str(raised.value)
        assert message.startswith(f"{option}[0]: invalid CEL expression (")
        assert "may run 1608040200 times, over its cost budget of 100000 (max_cost" in message
    # Over lists of the data, whose size is unknown: 100 elements assumed a level.
    with pytest.raises(PatternError, match="may run 101010100 times"):
        toolfilter_fast.compile(exclude=[Cel(four_nested_exists("ctx.l"))])
    # The budget is the pattern's own: raised, the same expression compiles.
    assert toolfilter_fast.compile(exclude=[Cel(hostile, max_cost=2_000_000_000)])


def test_a_run_over_its_budget_is_stopped_and_fails_closed():
    two_deep = "ctx.l.exists(a, ctx.l.exists(b, a + b < 0))"  # estimated 10,100: accepted
    tool = Tool("s", "x")
    small, big = {"l": list(range(50))}, {"l": list(range(1000))}  # 2,550 and 1,001,000 runs
    exclude = toolfilter_fast.compile(exclude=[Cel(two_deep)])
    include = toolfilter_fast.compile(include=[Cel(two_deep + " || true")])
    assert exclude.visible(tool, small) and include.visible(tool, small)
    assert not exclude.visible(tool, big)
    # `error || true` is true in CEL; a spent budget still fails the run.
    assert not include.visible(tool, big)
    assert exclude.filter([tool, Tool("s", "y")], big) == []
    reason = exclude.explain(tool, big).reason
    assert "the expression ran its loops more than its cost budget of 100000 times (max_cost)" in reason
    # A budget of n allows n runs exactly.
    every = toolfilter_fast.compile(include=[Cel("ctx.l.all(x, x >= 0)", max_cost=100)])
    assert every.visible(tool, {"l": list(range(100))})
    assert not every.visible(tool, {"l": list(range(101))})


def test_max_cost_is_an_argument_and_a_policy_option():
    assert _core.CelProgram("true").max_cost == CEL_MAX_COST == Cel("true").max_cost
    cheap = Cel("ctx.l.all(x, x > 0)", max_cost=150)
    assert cheap.max_cost == 150 and _core.CelProgram(cheap.source, cheap.max_cost).estimate == 100
    assert repr(cheap) == "Cel('ctx.l.all(x, x > 0)', max_cost=150)"
    assert cheap != Cel(cheap.source) and pickle.loads(pickle.dumps(cheap)) == cheap
    assert hash(cheap) == hash(Cel(cheap.source, max_cost=150))
    for bad, error in [(True, TypeError), (1.5, TypeError), ("10", TypeError), (0, ValueError),
                       (-1, ValueError), (1 << 64, ValueError)]:
        with pytest.raises(error, match="max_cost must be"):
            Cel("true", max_cost=bad)
    with pytest.raises(PatternError, match="over its cost budget of 99"):
        toolfilter_fast.compile(include=[Cel("ctx.l.all(x, x > 0)", max_cost=99)])
    policy = Policy.from_config({"filter": {"exclude": [
        {"cel": "ctx.l.exists(x, x < 0)", "max_cost": 100}]}})
    assert policy.filter.exclude == (Cel("ctx.l.exists(x, x < 0)", max_cost=100),)
    tools = [Tool("s", "a"), Tool("s", "b")]
    assert len(policy.select(tools, ctx={"l": [1] * 100}).tools) == 2
    assert policy.select(tools, ctx={"l": [1] * 101}).tools == []
    for bad in [0, True, "5", 1.0]:
        with pytest.raises(ConfigError, match=r"filter\.exclude\[0\]: 'max_cost' must be a positive"):
            ToolFilter.from_config({"filter": {"exclude": [{"cel": "true", "max_cost": bad}]}})
    with pytest.raises(ConfigError, match="the keys are 'cel', 'trusted' and 'max_cost'"):
        ToolFilter.from_config({"filter": {"exclude": [{"cel": "true", "budget": 5}]}})
    # explain names a pattern as a file writes it, the budget with it when it is not the default.
    assert describe_pattern(cheap) == '{cel = "ctx.l.all(x, x > 0)", max_cost = 150}'
    assert describe_pattern(Cel("true")) == '{cel = "true"}'


# --- item 6: matches() is RE2 --------------------------------------------------------

MATCHES = _core.CelProgram("tool.matches(ctx)")


def re2_match(text: str, pattern: str) -> bool | None:
    """The fast path's ``text.matches(pattern)``; None when it gives no verdict."""
    return MATCHES.evaluate(text, pattern)[0]


@pytest.mark.parametrize(("pattern", "text", "expected"), [
    (r"^\w+$", "paypal", True),
    (r"^\w+$", "p\u0430ypal", False),  # a Cyrillic a
    (r"^\w+$", "\u0440\u0430\u0443", False),  # all Cyrillic
    (r"^\d+$", "\u0663\u0664", False),  # Arabic-Indic digits
    (r"^\d+$", "\uff11", False),  # a fullwidth one
    (r"\s", "\u00a0", False),  # no-break space
    (r"\s", "\u2003", False),  # em space
    (r"\s", "\v", False),  # RE2's \s has no vertical tab
    (r"[[:space:]]", "\v", True),
    (r"x\b", "x\u0430", True),  # a Cyrillic letter is no word character
    (r"\bx", "\u00e9x", True),
    (r"^\W+$", "\u0430\u00e9", True),
    (r"^[\w.]+$", "a.\u0430", False),
    (r"(?i)^\w$", "\u212a", True),  # the Kelvin sign folds to k, as in RE2
    (r"(?i)^admin$", "ADM\u0130N", False),  # dotted capital I is no fold of i
    (r"^.$", "\U0001f600", True),  # one code point, not a byte
    (r"^\pL+$", "\u0430\u03c3", True),
    (r"^\p{Greek}+$", "\u03a3\u03c3", True),
    (r"^\p{Greek}$", "\u0342", False),  # Inherited, Greek only by extension
    (r"\pC", "\u0378", False),  # unassigned: not in RE2's C
])
def test_matches_gives_re2_answers_on_hostile_text(pattern, text, expected):
    assert re2_match(text, pattern) is expected
    f = toolfilter_fast.compile(include=[Cel(f"tool.name.matches({_cel_string(pattern)})")])
    assert f.visible(Tool("s", text)) is expected


def test_a_lookalike_name_is_not_a_word():
    admin_only = toolfilter_fast.compile(exclude=[Cel("!tool.name.matches('^\\\\w+$')")])
    assert admin_only.visible(Tool("s", "delete_repo"))
    assert not admin_only.visible(Tool("s", "d\u0435lete_repo"))  # a Cyrillic e


@pytest.mark.parametrize("pattern", [
    r"(a)\1", r"(?=a)", r"(?!a)", r"(?<=a)b", r"(?<!a)b", r"(?x) a", r"[a&&b]", r"[[a]]",
    r"\u0041", r"\p{Grek}", r"\p{greek}", r"\p{Letter}", r"\p{sc=Greek}", r"a{1001}",
    r"(a{10}){101}", r"a**", r"\Qa\E", "(",
])
def test_syntax_re2_does_not_take_is_refused_with_a_message(pattern):
    verdict, why = MATCHES.evaluate("a", pattern)
    assert verdict is None and why is not None
    assert "is not an RE2 regular expression this engine runs" in why and "\n" not in why
    # A literal pattern is refused with the compile.
    with pytest.raises(PatternError, match=r"matches: .* is not an RE2 regular expression"):
        toolfilter_fast.compile(include=[Cel(f"tool.name.matches({_cel_string(pattern)})")])


def _cel_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# Hypothesis against RE2 itself (the google-re2 package: RE2's own engine).
try:
    import re2
except ImportError:  # pragma: no cover - the test extra installs it
    re2 = None

_CHARS = ["a", "b", "k", "K", "_", "0", "9", " ", "\t", "\n", "\v", ".", "-",
          "\u0430", "\u212a", "\u017f", "\u0130", "\u0131", "\u03a3", "\u03c3", "\u03c2",
          "\u0663", "\u00a0", "\u00e9", "\u0342", "\u0378", "\x01", "\U0001f600"]
_atoms = st.sampled_from([
    "a", "k", "K", "_", "0", r"\.", ".", r"\w", r"\W", r"\d", r"\D", r"\s", r"\S", r"\b", r"\B",
    "^", "$", r"\A", r"\z", "[a-z]", "[^a-z]", r"[\w-]", r"[^\w]", r"[\d_]", r"[\W\d]",
    r"[^\s\d]", r"\pL", r"\PL", r"\pN", r"\pC", r"\p{Greek}", r"\p{^Greek}", r"\P{Lu}",
    r"\p{Cyrillic}", r"[\p{Lu}\d]", "[[:word:]]", "[[:space:]]", "[[:^alpha:]]", "\u0430",
    "\u03c3", r"\x{212A}",
])
_patterns = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.builds(lambda a, b: a + b, inner, inner),
        st.builds(lambda a, b: f"{a}|{b}", inner, inner),
        st.builds(lambda a: f"({a})", inner),
        st.builds(lambda f, a: f"(?{f}:{a})", st.sampled_from(["i", "s", "m", "-i", "i-s"]), inner),
        st.builds(lambda a, op: f"(?:{a}){op}", inner, st.sampled_from(["*", "+", "?", "{2}", "{1,3}"])),
    ),
    max_leaves=6,
)


@pytest.mark.skipif(re2 is None, reason="google-re2 (the test extra) is RE2 itself, to compare")
@settings(deadline=None)
@given(pattern=_patterns, text=st.lists(st.sampled_from(_CHARS), max_size=6).map("".join))
def test_matches_equals_re2(pattern, text):
    try:
        compiled = re2.compile(pattern)
    except re2.error:
        assert re2_match(text, pattern) is None, pattern
        return
    assert re2_match(text, pattern) is (compiled.search(text) is not None), (pattern, text)


# --- item 9: ctx is converted once a call -------------------------------------------


class CountingCtx(Mapping[str, Any]):
    """A ctx that counts how often it is read whole (CEL converts a mapping
    that is not a dict through its ``items``)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data, self.reads = data, 0

    def items(self) -> Any:
        self.reads += 1
        return self.data.items()

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


def test_a_dynamic_expression_converts_ctx_once_a_call():
    tools = [Tool("s", f"t{i}") for i in range(40)]
    f = toolfilter_fast.compile(exclude=[Cel('"blocked" in ctx.claims')],
                                include=[Cel("ctx.role == 'admin'"), "s/t1*"])
    for call in (f.filter, f.mask):
        ctx = CountingCtx({"role": "user", "claims": ["a", "b"]})
        call(tools, ctx)
        assert ctx.reads == 1, call
    ctx = CountingCtx({"role": "admin", "claims": ["blocked"]})
    assert f.filter(tools, ctx) == [] and ctx.reads == 1
    ctx = CountingCtx({"role": "admin", "claims": []})
    assert f.filter(tools, ctx) == tools and ctx.reads == 1
    assert f.visible(tools[0], ctx) and ctx.reads == 2
    policy = Policy.from_config({"filter": {"include": [{"cel": "ctx.role == 'admin'"}]}})
    ctx = CountingCtx({"role": "admin"})
    assert len(policy.select(tools, ctx=ctx).tools) == len(tools) and ctx.reads == 1
    # A selection's reasons convert it once too, for all its dropped tools.
    ctx = CountingCtx({"role": "user"})
    selection = policy.select(tools, ctx=ctx)
    reasons = [dropped.reason for dropped in selection.dropped]
    assert len(reasons) == len(tools) and ctx.reads == 2
    assert reasons[0] == policy.filter.explain(tools[0], {"role": "user"}).reason
    # A ctx CEL cannot hold fails every tool closed, as before.
    assert f.filter(tools, {"role": object()}) == []


# --- item 5: trusted is read as characters ------------------------------------------


class AlwaysEqual(str):
    """A str subclass whose ``__eq__`` says yes to everything (``"*"`` too)."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


class StarContains(str):
    """A str subclass that claims to hold every text."""

    def __contains__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


@pytest.mark.parametrize("liar", [AlwaysEqual, StarContains])
def test_a_str_subclass_in_trusted_does_not_trust_every_server(liar):
    entry = Cel("tool.annotations.readOnlyHint", trusted=[liar("github")])
    assert all(type(glob) is str for glob in entry.trusted) and entry.trusted == ("github",)
    f = toolfilter_fast.compile(include=[entry])
    read_only = {"readOnlyHint": True}
    assert f.visible(Tool("github", "get", annotations=read_only))
    # Another server's hints are not believed: readOnlyHint takes its default, false.
    assert not f.visible(Tool("evil", "get", annotations=read_only))
    explained = toolfilter_fast.compile(exclude=[Cel("!tool.annotations.readOnlyHint",
                                                     trusted=[liar("github")])])
    assert not explained.explain(Tool("evil", "get", annotations=read_only)).visible


# --- errors on one line ------------------------------------------------------------


@pytest.mark.parametrize("source", [
    "tool.name ==", "(", "1 +* 2", "tool.name.startsWith('a'", "tool.name ==\n\n  'x' &&",
    "tool.name.matches('(?=x)')", four_nested_exists(LIST),
])
def test_cel_errors_are_one_line(source, capsys, tmp_path):
    with pytest.raises(PatternError) as raised:
        toolfilter_fast.compile(include=[Cel(source)])
    assert "\n" not in str(raised.value)
    config = tmp_path / "bad.toml"
    config.write_text("[filter]\ninclude = [{cel = " + _toml_string(source) + "}]\n")
    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text('{"server_id": "s", "name": "x"}\n')
    assert main(["check", "--config", str(config), str(catalog)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid CEL expression" in err, err


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
