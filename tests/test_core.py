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
