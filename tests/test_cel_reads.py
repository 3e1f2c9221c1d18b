"""The fast path builds, of ``tool`` and ``ctx``, only what an expression reads
(``CelProgram.evaluate_tool``, ``CelValue(ctx, programs)``): the rest is read
and checked as it would be converted, so that every verdict and every reason is
the one of the whole value.

The oracle is the same expression behind ``[tool, ctx].size() == 2 && ...``,
which reads both variables whole (and, true, leaves the rest's value and error
as they are).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import Cel, Tool, _core
from toolfilter_fast.filter.judges import SharedCtx, hints_of

EXPRESSIONS = [
    'ctx.claims.role == "admin" || tool.name.startsWith("get_")',
    "tool.name == 'get_x' && ctx.sub != ''",
    "has(tool.meta.k) && tool.meta.k == 1",
    "has(ctx.claims.role)",
    "tool.title == 'T' || tool.description == 'D'",
    "tool.annotations.readOnlyHint",
    "size(ctx.claims) > 1",
    "ctx.claims.exists(k, k == 'role')",
    "tool.server_id.startsWith('s') && !has(tool.meta.k)",
    "ctx.claims.role.startsWith('ad')",
    "true",
]


def whole(source: str) -> str:
    return f"[tool, ctx].size() == 2 && ({source})"


def both(source: str, tool: Any, ctx: Any) -> tuple[Any, Any]:
    """(pruned, whole) outcomes of ``source`` on ``tool`` under ``ctx``."""
    pruned, oracle = _core.CelProgram(source), _core.CelProgram(whole(source))
    server_id, name = getattr(tool, "server_id", "s"), getattr(tool, "name", "n")
    got = pruned.evaluate_tool(tool, server_id, name, True,
                               _core.CelValue(ctx, (pruned,)), hints_of)
    want = oracle.evaluate_tool(tool, server_id, name, True, _core.CelValue(ctx), hints_of)
    return got, want


class Raising:
    """A tool whose ``description`` property raises something other than AttributeError."""

    server_id, name, title, meta, annotations = "s", "get_x", "T", None, None

    @property
    def description(self) -> str:
        raise RuntimeError("no description today")


class Missing:
    """A tool whose ``title`` property raises AttributeError: read as missing (null)."""

    server_id, name, description, meta, annotations = "s", "get_x", "D", {"k": 1}, None

    @property
    def title(self) -> str:
        raise AttributeError("title")


class Liar(str):
    """A str subclass whose methods lie: only its characters may be read."""

    def __eq__(self, other: object) -> bool:
        return True

    def startswith(self, *args: Any) -> bool:  # type: ignore[override]
        return True

    __hash__ = str.__hash__


CTXS: list[Any] = [
    {"sub": "u", "claims": {"role": "admin"}},
    {"sub": "u", "claims": {"role": "user", "other": "\ud800"}},  # unread: still fails
    {"sub": "u", "claims": {"role": "user"}, "junk": object()},  # unread: still fails
    {"sub": "u", "claims": {"role": Liar("user")}},
    {"sub": "u", "claims": ["role"]},
    {"sub": "u", "claims": {1: "a", False: "b", "role": "x"}},
    {"sub": "u"},
    None,
    "text",
    {"claims": {"role": "admin", "deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}},
]

TOOLS: list[Any] = [
    Tool("s", "get_x"),
    Tool("s", "update_x", title="T", meta={"k": 1}, annotations={"readOnlyHint": True}),
    Tool("s", "get_x", description="\udc80"),  # a lone surrogate in a field most do not read
    Tool("s", "get_x", meta={"k": 2, "bad": {1.5: 2}}),  # a key CEL maps cannot hold
    Tool("s", Liar("get_x"), title=Liar("T")),
    Tool("srv", "get_x", meta={"k": 1, "other": "\ud800"}),
    Missing(),
    None,
]


@pytest.mark.parametrize("source", EXPRESSIONS)
@pytest.mark.parametrize("ctx", CTXS, ids=range(len(CTXS)))
@pytest.mark.parametrize("tool", TOOLS, ids=range(len(TOOLS)))
def test_pruned_outcomes_are_the_whole_values(source, ctx, tool):
    got, want = both(source, tool, ctx)
    assert got == want


def test_unread_fields_still_fail_closed():
    # A lone surrogate in a description the rule never reads: no verdict, as before.
    got, _ = both("tool.name == 'get_x'", Tool("s", "get_x", description="\udc80"), None)
    assert got == (None, 'tool["description"] holds a lone surrogate, which CEL text cannot')
    # A ctx that cannot be converted anywhere fails every tool, read or not.
    got, _ = both("ctx.sub == 'u'", Tool("s", "x"), {"sub": "u", "junk": {1, 2}})
    assert got[0] is None and 'ctx["junk"] is a set' in got[1]


def test_a_property_that_raises_is_raised_and_hides_the_tool():
    program = _core.CelProgram("tool.name == 'get_x'")
    with pytest.raises(RuntimeError, match="no description today"):
        program.evaluate_tool(Raising(), "s", "get_x", False, None, hints_of)
    for option in ("include", "exclude"):
        f = toolfilter_fast.compile(**{option: [Cel("ctx.on && tool.name == 'get_x'")]})
        assert f.filter([Raising()], {"on": True}) == []
    # AttributeError reads as a missing field: null.
    assert _core.CelProgram("tool.title == null").evaluate_tool(
        Missing(), "s", "n", False, None, hints_of) == (True, None)


def test_str_subclasses_are_read_as_characters():
    program = _core.CelProgram("tool.name.startsWith('get_') || tool.title == 'x'")
    liar = Tool("s", Liar("delete_all"), title=Liar("T"))
    assert program.evaluate_tool(liar, "s", liar.name, False, None, hints_of) == (False, None)


def test_a_value_built_for_other_programs_is_converted_anew():
    reads_a, reads_b = _core.CelProgram("ctx.a == 1"), _core.CelProgram("ctx.b == 2")
    shared = _core.CelValue({"a": 1, "b": 2}, (reads_a,))
    assert reads_a.evaluate({}, shared) == (True, None)
    assert reads_b.evaluate({}, shared) == (True, None)
    # Built for both, or for all (no programs named): each reads what it reads.
    for value in (_core.CelValue({"a": 1, "b": 2}, (reads_a, reads_b)),
                  _core.CelValue({"a": 1, "b": 2})):
        assert reads_a.evaluate({}, value) == reads_b.evaluate({}, value) == (True, None)
    with pytest.raises(TypeError):
        _core.CelValue({}, ("ctx.a",))  # type: ignore[arg-type]


def test_the_filter_converts_only_what_its_expressions_read():
    # Two expressions read different parts of ctx; one conversion serves both.
    f = toolfilter_fast.compile(include=[Cel("ctx.claims.role == 'admin'")],
                                exclude=[Cel("ctx.blocked.exists(n, n == tool.name)")])
    tools = [Tool("s", "a"), Tool("s", "b")]
    ctx = {"claims": {"role": "admin", "many": list(range(50))}, "blocked": ["b"], "x": 1}
    assert f.filter(tools, ctx) == [tools[0]]
    assert f.visible(tools[0], ctx) and not f.visible(tools[1], ctx)
    # What neither reads is still checked: a set in it fails both closed.
    assert f.filter(tools, {**ctx, "x": {1}}) == []
    shared = SharedCtx({**ctx, "x": {1}}, f._cel_programs)
    assert f._include_fns[0].call_shared(tools[0], shared) is None


def test_each_call_sees_its_own_ctx():
    # The part that reads only ctx is evaluated once a call: never kept for the next.
    f = toolfilter_fast.compile(include=[Cel(EXPRESSIONS[0])])
    tools = [Tool("s", "get_a"), Tool("s", "put_b")]
    for role, want in [("admin", tools), ("user", tools[:1]), ("admin", tools), ("user", tools[:1])]:
        ctx = {"claims": {"role": role}}
        assert f.filter(tools, ctx) == want
        assert f.mask(tools, ctx) == [tool in want for tool in tools]
        assert [f.visible(tool, ctx) for tool in tools] == [tool in want for tool in tools]
    # One program, two converted values taken in turn, each evaluated many times.
    program = _core.CelProgram(EXPRESSIONS[0])
    admin = _core.CelValue({"claims": {"role": "admin"}}, (program,))
    user = _core.CelValue({"claims": {"role": "user"}}, (program,))
    for _ in range(3):
        for value, want in [(admin, True), (admin, True), (user, False), (user, False)]:
            assert program.evaluate({"name": "put_b"}, value) == (want, None)
    failing = _core.CelValue({"claims": {"role": 1}}, (program,))
    for _ in range(3):
        assert program.evaluate({"name": "put_b"}, failing) == (False, None)
        assert program.evaluate({"name": 3}, failing)[0] is None


text = st.text(alphabet=st.sampled_from("ab_\ud800\u0130 "), max_size=4)
leaf = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), text,
                 st.sampled_from([object(), 1.5, b"x", Liar("role")]))
values = st.recursive(leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.one_of(st.sampled_from(["role", "claims", "sub", "k", "a"]), text,
                              st.integers(-2, 2), st.sampled_from([1.5, Liar("role")])),
                    inner, max_size=4)), max_leaves=12)


@given(source=st.sampled_from(EXPRESSIONS), ctx=values, meta=values, title=leaf, name=text)
def test_pruned_equals_whole_on_any_value(source, ctx, meta, title, name):
    tool = Tool("s", name, title=title, meta=meta, description="d")
    got, want = both(source, tool, ctx)
    assert got == want


def test_a_collection_during_conversion_never_changes_a_dict_being_read() -> None:
    """The quick conversion pass allocates (an exact list's iterator); were the
    cyclic collector to run then, a finalizer could add to the very dict being
    read, which pyo3's iteration answers with a panic. Cyclic garbage with such
    finalizers is made before each conversion, with the collector's threshold
    at its lowest: every verdict is still the one of ctx as it was read."""
    import gc

    ctx: dict[str, Any] = {"a": [1, 2, 3], **{f"k{i}": [i, [i]] for i in range(40)}}
    added = []

    class Trap:
        def __init__(self) -> None:
            self.me = self  # a cycle: only the collector frees it

        def __del__(self) -> None:
            key = f"added{len(added)}"
            added.append(key)
            ctx[key] = [0]

    program = _core.CelProgram("ctx.a.size() == 3 && tool.name == 'x'")
    # Everything the calls take is made first, so that the first allocation
    # of a tracked object after a Trap is made (and dropped) is the conversion's.
    evaluate, tool, shared, verdicts = program.evaluate, {"name": "x"}, _core.CelValue, []
    old = gc.get_threshold()
    gc.collect()
    gc.set_threshold(1, 1, 1)
    try:
        for _ in range(300):
            Trap()
            verdicts.append(evaluate(tool, ctx))
            Trap()
            verdicts.append(evaluate(tool, shared(ctx)))
    finally:
        gc.set_threshold(*old)
    assert verdicts == [(True, None)] * 600
    assert added, "the finalizers ran"
