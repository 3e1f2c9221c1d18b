"""The Rust core seen from Python: folds, globs, conversions and bad input."""

from __future__ import annotations

import pytest

import toolfilter_fast
from toolfilter_fast import Tool, _core, reference

ADVERSARIAL = "*a" * 10 + "*b"


@pytest.mark.parametrize("module", [toolfilter_fast, reference])
def test_adversarial_glob_answers_right(module):
    name = "a" * 100_000
    if module is reference:
        name = "a" * 2_000  # the reference is quadratic; the answer is the same shape
    assert module.glob_match(ADVERSARIAL, name) is False
    assert module.glob_match(ADVERSARIAL, name + "b") is True
    assert module.glob_match(ADVERSARIAL, "b" + name) is False


def test_adversarial_pattern_in_a_filter():
    f = toolfilter_fast.compile(include=["s/" + ADVERSARIAL], exclude=[ADVERSARIAL.upper()])
    assert not f.visible(Tool("s", "a" * 100_000))
    assert not f.visible(Tool("s", "a" * 100_000 + "b"))   # excluded loosely
    assert f.static_visible(Tool("s", "a" * 100_000 + "c")) is False


@pytest.mark.parametrize(
    "text, loose",
    [
        ("Delete-Repo", "delete_repo"),
        ("\ud800X", "\ud800x"),           # lone surrogates survive, unreplaced
        ("\udfff", "\udfff"),
        ("İ", "i\u0307"),
        ("ΑΣ", "ασ"),
        ("\u212a", "k"),
        ("ß", "ß"),
        ("A\x00.B", "a\x00_b"),
    ],
)
def test_fold_loose(text, loose):
    assert _core.fold_loose(text) == loose


def test_surrogate_never_matches_replacement_character():
    assert not _core.glob_match("\ufffd", "\ud800")
    assert not _core.glob_match("\ud800", "\ufffd")
    assert _core.glob_match("*\ud800*", "x\ud800y")
    f = toolfilter_fast.compile(exclude=["*/\ufffd"])
    assert f.visible(Tool("s", "\ud800"))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: _core.fold_loose(3), "s must be str, not int"),
        (lambda: _core.glob_match(b"a", "a"), "pattern must be str, not bytes"),
        (lambda: _core.RuleSet(["a", 1]), r"patterns\[1\] must be str, not int"),
        (lambda: _core.RuleSet(["a"]).is_match(None, "x"), "server_id must be str, not NoneType"),
    ],
)
def test_core_type_errors_name_the_argument(call, message):
    with pytest.raises(TypeError, match=message):
        call()


@pytest.mark.parametrize("module", [toolfilter_fast, reference])
def test_non_tools_get_a_type_error(module):
    f = module.compile(include=["*"])
    with pytest.raises(TypeError, match="expected a Tool"):
        f.visible("github/x")
    with pytest.raises(TypeError, match=r"expected a Tool"):
        f.filter([Tool("s", "t"), 42])


def test_batches_name_the_bad_position():
    f = toolfilter_fast.compile(include=["*"])
    with pytest.raises(TypeError, match=r"tools\[1\]: expected a Tool"):
        f.static_filter([Tool("s", "t"), 42])

    class Fake:
        server_id = "s"
        name = b"t"

    with pytest.raises(TypeError, match=r"tools\[0\]\.name must be str, not bytes"):
        f.static_mask([Fake()])
    with pytest.raises(TypeError, match=r"pairs\[1\] must be a \(server_id, name\) tuple"):
        f.static_mask_pairs([("s", "t"), ("s",)])
    with pytest.raises(TypeError, match=r"pairs\[0\]\[1\] must be str, not int"):
        f.static_mask_pairs([("s", 1)])
    with pytest.raises(TypeError, match=r"names\[0\] must be str, not NoneType"):
        f.static_mask_columns(["s"], [None])
    with pytest.raises(ValueError, match="differ in length"):
        f.static_mask_columns(["s"], [])


def test_duck_typed_tool_with_non_str_name():
    class Fake:
        server_id = "s"
        name = 5

    for module in (toolfilter_fast, reference):
        for f in (module.compile(), module.compile(include=["*"])):
            with pytest.raises(TypeError, match="name must be str, not int"):
                f.visible(Fake())


def test_rule_set_reports_first_match_index():
    rules = _core.RuleSet(["x/*", "*/y", "*"], False)
    assert rules.first_match("s", "y") == 1
    assert rules.first_match("x", "y") == 0
    assert len(rules) == 3


# --- full-fidelity tools ---------------------------------------------------------------


REAL_SHAPED = [
    {"name": "get_issue", "title": "Get issue", "description": "One issue.",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
     "outputSchema": {"type": "object", "properties": {"title": {"type": "string"}}},
     "icons": [{"src": "https://example.invalid/i.svg", "mimeType": "image/svg+xml", "sizes": ["any"]}],
     "annotations": {"title": "Get issue", "readOnlyHint": True, "openWorldHint": True},
     "_meta": {"io.example/owner": "team-a", "nested": [1, {"x": None}]}},
    {"_meta": {"a": 1}, "inputSchema": {"type": "object"}, "name": "ordered_differently",
     "x-vendor-field": {"kept": True}, "description": None},
    {"name": "odd_title", "title": 5, "inputSchema": {"type": "object"}, "future": [1, 2]},
    {"name": "minimal", "inputSchema": {"type": "object", "properties": {}}},
]


def test_definitions_round_trip_byte_for_byte():
    import json

    for definition in REAL_SHAPED:
        text = json.dumps(definition, ensure_ascii=False)
        tool = Tool.from_mcp("s", json.loads(text))
        assert json.dumps(tool.to_mcp(), ensure_ascii=False) == text
    tool = Tool.from_mcp("s", REAL_SHAPED[0])
    assert (tool.title, tool.output_schema, tool.icons, tool.meta, tool.extra) == (
        "Get issue", REAL_SHAPED[0]["outputSchema"], REAL_SHAPED[0]["icons"],
        REAL_SHAPED[0]["_meta"], None)
    assert Tool.from_mcp("s", REAL_SHAPED[1]).extra == {"x-vendor-field": {"kept": True}}
    assert Tool.from_mcp("s", REAL_SHAPED[2]).title is None
    # A Tool made directly writes its fields under their wire names.
    direct = Tool("s", "t", "d", {"type": "object"}, {"readOnlyHint": True}, title="T",
                  extra={"x": 1})
    assert direct.to_mcp() == {"name": "t", "title": "T", "description": "d",
                               "inputSchema": {"type": "object"},
                               "annotations": {"readOnlyHint": True}, "x": 1}


def test_sdk_tools_keep_their_fields():
    types = pytest.importorskip("mcp.types", reason="the MCP SDK (the adapters extra)")
    sdk = types.Tool(name="x", title="X", inputSchema={"type": "object"},
                     outputSchema={"type": "object"}, _meta={"k": "v"},
                     annotations=types.ToolAnnotations(readOnlyHint=True))
    tool = Tool.from_mcp("s", sdk)
    assert tool.to_mcp()["_meta"] == {"k": "v"} and tool.output_schema == {"type": "object"}
    assert toolfilter_fast.compile(include=[toolfilter_fast.Annotations(readOnlyHint=True)]).visible(tool)
