"""explain: the decision of ``visible``, with the step, pattern and calls that made it."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from toolfilter_fast import Decision, PatternError, Tool, ToolFilter, reference
from toolfilter_fast.filter.explain import STEPS, Explainer, describe_pattern, explain


def raises_value_error(tool, ctx):
    raise ValueError("policy service down")


def returns_yes(tool, ctx):
    return "yes"


def admins_only(tool, ctx):
    return (ctx or {}).get("role") != "admin"


# --- examples ------------------------------------------------------------------------


def test_static_exclude_reports_pattern_index_and_folded_forms():
    f = ToolFilter.compile(exclude=["fs/*", "*/delete_repo"])
    d = f.explain(Tool("GitHub", "Delete-Repo"))
    assert isinstance(d, Decision)
    assert (d.visible, d.static_visible, d.step) == (False, False, "static_exclude")
    assert (d.pattern.option, d.pattern.index, d.pattern.kind) == ("exclude", 1, "string")
    assert d.pattern.source == '"*/delete_repo"'
    assert (d.pattern.server_glob, d.pattern.tool_glob) == ("*", "delete_repo")
    assert d.matched_on == "folded"
    assert (d.folded_server_id, d.folded_name) == ("github", "delete_repo")
    assert d.reason == ('hidden: exclude[1] "*/delete_repo" matches '
                        '(loose: server "github", name "delete_repo")')
    assert d.calls == ()


def test_exclude_string_matching_as_written_is_raw():
    f = ToolFilter.compile(exclude=["*/delete_*"])
    d = f.explain(Tool("fs", "delete_file"))
    assert d.matched_on == "raw"
    assert d.reason == 'hidden: exclude[0] "*/delete_*" matches'


def test_lowest_index_static_pattern_decides():
    f = ToolFilter.compile(exclude=["x/y", ("*", re.compile("^drop")), "*/drop_*", "*"])
    d = f.explain(Tool("db", "drop_table"))
    assert (d.pattern.index, d.pattern.kind, d.matched_on) == (1, "regex", "raw")
    assert d.pattern.source == '{server = "*", regex = "^drop"}'


def test_exclude_regex_on_folded_name_only():
    f = ToolFilter.compile(exclude=[("*", re.compile("^drop_"))])
    d = f.explain(Tool("db", "Drop-Table"))
    assert (d.visible, d.matched_on) == (False, "folded")


def test_regex_flags_in_source():
    f = ToolFilter.compile(include=[("s*", re.compile("^list", re.I | re.M))])
    d = f.explain(Tool("slack", "LIST_CHANNELS"))
    assert d.step == "static_include"
    assert d.pattern.flags == "im"
    assert d.pattern.source == '{server = "s*", regex = "^list", flags = "im"}'


def test_include_empty():
    d = ToolFilter.compile().explain(Tool("a", "b"))
    assert (d.visible, d.step, d.pattern) == (True, "include_empty", None)
    assert d.reason == "visible: no exclude pattern matches and include is empty"


def test_exclude_function_that_raises_hides_and_says_so():
    f = ToolFilter.compile(exclude=[returns_false := (lambda t, c: False), raises_value_error])
    d = f.explain(Tool("a", "b"))
    assert (d.visible, d.step, d.static_visible) == (False, "exclude_callable", True)
    assert [c.outcome for c in d.calls] == ["false", "raised"]
    last = d.calls[-1]
    assert (last.error_type, last.error_message, last.matched) == (
        "ValueError", "policy service down", True)
    assert d.pattern.index == 1
    assert "test_explain:raises_value_error" in d.pattern.source
    assert "raised ValueError: policy service down (fails closed: counts as a match)" in d.reason
    assert returns_false(None, None) is False


def test_include_function_non_bool_fails_closed():
    f = ToolFilter.compile(include=["github/*", returns_yes])
    d = f.explain(Tool("fs", "read"))
    assert (d.visible, d.step, d.static_visible) == (False, "no_include_match", True)
    (call,) = d.calls
    assert (call.outcome, call.returned, call.matched) == ("non_bool", "'yes'", False)
    assert "returned a non-bool 'yes' (fails closed: counts as no match)" in d.reason


def test_include_function_true():
    f = ToolFilter.compile(include=["github/*", lambda t, c: True])
    d = f.explain(Tool("fs", "read"))
    assert (d.visible, d.step, d.pattern.index, d.pattern.kind) == (
        True, "include_callable", 1, "callable")


def test_static_include_miss_decides_before_exclude_functions():
    # The static patterns decided (include without functions misses): no function runs.
    f = ToolFilter.compile(include=["github/*"], exclude=[admins_only])
    d = f.explain(Tool("fs", "read"), {"role": "user"})
    assert (d.visible, d.step, d.static_visible, d.calls) == (False, "no_include_match", False, ())
    assert d.static_visible == f.static_visible(Tool("fs", "read"))
    d = f.explain(Tool("github", "read"), {"role": "user"})
    assert (d.visible, d.step, d.static_visible) == (False, "exclude_callable", True)


def test_near_miss_names_the_include_pattern_that_would_match_loosely():
    f = ToolFilter.compile(include=["slack/*", "github/create-issue"])
    d = f.explain(Tool("GitHub", "Create_Issue"))
    assert d.step == "no_include_match"
    assert d.near_miss is not None and d.near_miss.index == 1
    assert "include[1] \"github/create-issue\" would match loosely" in d.reason
    assert f.explain(Tool("fs", "x")).near_miss is None


def test_to_dict_is_json_and_stable():
    f = ToolFilter.compile(include=["github/*", raises_value_error], exclude=["*/delete_*"])
    for tool in (Tool("github", "x"), Tool("fs", "y"), Tool("fs", "delete_y")):
        d = f.explain(tool)
        doc = json.loads(json.dumps(d.to_dict()))
        assert set(doc) == {"server_id", "name", "visible", "static_visible", "step", "reason",
                            "pattern", "matched_on", "calls", "folded", "near_miss", "hints",
                            "trusted", "effective_hints", "detail"}
        assert doc["visible"] is d.visible and doc["step"] in STEPS
    doc = f.explain(Tool("fs", "y")).to_dict()
    assert doc["calls"][0]["error_type"] == "ValueError"


def test_str_of_exception_that_raises():
    class Odd(Exception):
        def __str__(self):
            raise RuntimeError("no")

    def odd(tool, ctx):
        raise Odd

    d = ToolFilter.compile(exclude=[odd]).explain(Tool("a", "b"))
    assert d.calls[0].error_type == "Odd"
    assert "str() raised RuntimeError" in d.calls[0].error_message


def test_base_exceptions_propagate():
    def interrupt(tool, ctx):
        raise KeyboardInterrupt

    f = ToolFilter.compile(exclude=[interrupt])
    with pytest.raises(KeyboardInterrupt):
        f.explain(Tool("a", "b"))


def test_bad_tool_is_a_type_error():
    f = ToolFilter.compile(exclude=["x"])
    with pytest.raises(TypeError, match="expected a Tool"):
        f.explain("a/b")
    with pytest.raises(TypeError, match="name must be str"):
        explain(f, type("T", (), {"server_id": "a", "name": 3})())


def test_describe_pattern_forms():
    assert describe_pattern("a/b") == '"a/b"'
    assert describe_pattern(("*", re.compile("x"))) == '{server = "*", regex = "x"}'
    assert describe_pattern(admins_only) == '{callable = "test_explain:admins_only"}'


def test_works_on_the_reference_filter():
    f = reference.compile(include=["github/*"], exclude=["*/delete_*"])
    assert explain(f, Tool("github", "Delete.Repo")).step == "static_exclude"
    assert explain(f, Tool("github", "x")).visible is True


def test_many_patterns_attribute_the_first_match_across_blocks():
    # 400 string patterns make several RuleSet blocks; the winner sits late.
    patterns = [f"s{i}/t{i}" for i in range(400)] + ["*/target", "srv/*"]
    f = ToolFilter.compile(exclude=[*patterns[:250], ("*", re.compile("^targ")), *patterns[250:]])
    d = f.explain(Tool("srv", "target"))
    assert (d.pattern.index, d.pattern.kind) == (250, "regex")
    d = f.explain(Tool("s399", "T399"))
    assert (d.pattern.index, d.pattern.source) == (400, '"s399/t399"')


# --- properties ----------------------------------------------------------------------

ALPHABET = ["a", "A", "b", "-", ".", "_", "/", ":", "*", "İ", "Σ", "ς", "\ud800", "é"]
text = st.text(st.sampled_from(ALPHABET), max_size=5)
segment = st.text(st.sampled_from(ALPHABET), min_size=1, max_size=4)
string_pattern = st.one_of(
    text, st.builds(lambda s, t: f"{s}/{t}", segment, segment),
    st.sampled_from(["*", "*/*", "a*", "*a", "*a*"]),
)
regex_pattern = st.tuples(
    st.one_of(segment, st.just("*")),
    st.sampled_from(["a", "^A", "b$", "_", "\\.", "σ", "(?i)b", ""]).map(re.compile),
)
#: What a function pattern does when called; built fresh (and logged) per example.
BEHAVIOURS = ["true", "false", "none", "one", "str", "raise", "ctx", "name_len"]
function_spec = st.sampled_from(BEHAVIOURS).map(lambda b: ("fn", b))
any_spec = st.one_of(string_pattern, regex_pattern, function_spec)
tools = st.builds(Tool, text, text)
contexts = st.one_of(st.none(), st.integers(0, 3))


def make_function(behaviour, label, log):
    def fn(tool, ctx):
        log.append((label, tool, ctx))
        if behaviour == "raise":
            raise RuntimeError(label)
        return {
            "true": True, "false": False, "none": None, "one": 1, "str": "no",
            "ctx": isinstance(ctx, int) and (ctx + len(tool.name)) % 2 == 0,
            "name_len": True if len(tool.name) % 2 else 0,
        }[behaviour]
    return fn


def materialize(specs, option, log):
    out = []
    for index, spec in enumerate(specs):
        if isinstance(spec, tuple) and spec and spec[0] == "fn":
            out.append(make_function(spec[1], f"{option}[{index}]", log))
        else:
            out.append(spec)
    return out


def single(option, entry):
    return ToolFilter.compile(**{option: [entry]})


def static_hits(option, entry, tool):
    """Whether a one-pattern filter of ``entry`` matches ``tool`` statically."""
    f = single(option, entry)
    return not f.static_visible(tool) if option == "exclude" else f.static_visible(tool)


@given(st.lists(any_spec, max_size=5), st.lists(any_spec, max_size=5),
       st.lists(tools, min_size=1, max_size=5), contexts)
def test_explain_agrees_with_visible_and_calls_the_same_functions(
    include_specs, exclude_specs, tool_list, ctx,
):
    log: list = []
    include = materialize(include_specs, "include", log)
    exclude = materialize(exclude_specs, "exclude", log)
    try:
        f = ToolFilter.compile(include=include, exclude=exclude)
    except PatternError:
        return
    explainer = Explainer(f)
    for tool in tool_list:
        log.clear()
        visible = f.visible(tool, ctx)
        by_visible = list(log)
        log.clear()
        d = explainer.explain(tool, ctx)
        by_explain = list(log)
        assert d.visible == visible
        assert by_explain == by_visible  # same functions, same order, same arguments
        assert d.static_visible == f.static_visible(tool)
        assert d.step in STEPS
        event(d.step)
        # Each recorded call is the pattern that was called, in order.
        assert [f"{c.pattern.option}[{c.pattern.index}]" for c in d.calls] == \
            [label for label, _, _ in by_explain]
        for call in d.calls:
            assert call.matched == (call.outcome == "true" or (
                call.pattern.option == "exclude" and call.outcome in ("raised", "non_bool")))
            assert (call.error_type is not None) == (call.outcome == "raised")
            assert (call.returned is not None) == (call.outcome == "non_bool")
        if d.step in ("static_exclude", "static_include"):
            option = d.pattern.option
            entries = f.exclude if option == "exclude" else f.include
            assert static_hits(option, entries[d.pattern.index], tool)
            for earlier in entries[:d.pattern.index]:
                if not callable(earlier):
                    assert not static_hits(option, earlier, tool)
            if d.pattern.kind == "string":
                # "raw": the pattern matches as written; "folded": only loosely.
                exact = single("include", entries[d.pattern.index]).static_visible(tool)
                assert (d.matched_on == "raw") == exact
        if d.step in ("exclude_callable", "include_callable"):
            assert d.calls[-1].pattern == d.pattern and d.calls[-1].matched
        if d.near_miss is not None:
            assert d.step == "no_include_match"
            assert d.near_miss.kind in ("string", "regex")
        # The reference filter explains the same way.
        ref = reference.compile(include=include, exclude=exclude)
        log.clear()
        assert explain(ref, tool, ctx).to_dict() == d.to_dict()


@settings(max_examples=100)
@given(st.lists(string_pattern, min_size=20, max_size=80),
       st.lists(regex_pattern, max_size=3), st.lists(tools, min_size=1, max_size=4),
       st.booleans())
def test_first_match_across_blocks(strings, regexes, tool_list, as_exclude):
    entries = strings[: len(strings) // 2] + regexes + strings[len(strings) // 2:]
    option = "exclude" if as_exclude else "include"
    try:
        f = ToolFilter.compile(**{option: entries})
    except PatternError:
        return
    for tool in tool_list:
        d = f.explain(tool)
        assert d.visible == f.visible(tool)
        hits = [i for i, e in enumerate(entries) if static_hits(option, e, tool)]
        if hits:
            assert d.pattern is not None and d.pattern.index == hits[0]
        else:
            assert d.pattern is None


def test_agrees_with_visible_on_the_standard_workload():
    from toolfilter_fast.bench import workload as _workload

    tools = _workload.catalog(3_000)
    dynamic = _workload.dynamic_patterns()
    f = ToolFilter.compile(
        include=[*_workload.patterns(300, "include", tools), *dynamic["include"]],
        exclude=[*_workload.patterns(300, "exclude", tools), *dynamic["exclude"]],
    )
    explainer = Explainer(f)
    steps = set()
    for ctx in _workload.contexts():
        for tool in tools:
            d = explainer.explain(tool, ctx)
            assert d.visible == f.visible(tool, ctx)
            assert d.static_visible == f.static_visible(tool)
            steps.add(d.step)
    assert {"static_exclude", "static_include", "no_include_match"} <= steps
