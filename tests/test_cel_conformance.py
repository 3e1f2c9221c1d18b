"""The CEL specification's conformance tests (cel-spec's "simple" files) against the
fast path and the reference: every supported test passes on both, or is listed
with its reason. The files are fetched from PyPI at test time (see
``tests/_cel_conformance.py``); without a network the test is skipped, saying so.
"""

from __future__ import annotations

import subprocess

import pytest

import _cel_conformance as conformance


@pytest.fixture(scope="module")
def spec_files():
    try:
        return conformance.fetch()
    except (OSError, subprocess.TimeoutExpired) as err:
        pytest.skip(f"the cel-spec conformance files could not be fetched (offline?): {err}")


@pytest.fixture(scope="module")
def tallies(spec_files):
    return conformance.run(spec_files)


def _check(tally, expected, label):
    unexpected = {test: why for test, why in tally.failed.items() if test not in expected}
    trimmable = sorted(test for test in expected if test in tally.passed)
    print(f"\n{label}: {len(tally.passed)} passed, {len(tally.failed)} failed, "
          f"{len(tally.unsupported)} unsupported; expected failures that pass now: {trimmable}")
    assert not unexpected, "\n".join(f"{test}: {why}" for test, why in sorted(unexpected.items()))
    # Not a vacuous run: most tests of the supported files are run and pass.
    total = len(tally.passed) + len(tally.failed) + len(tally.unsupported)
    assert len(tally.passed) >= 0.8 * total


def test_every_supported_file_is_there(spec_files):
    assert set(conformance.SUPPORTED_FILES) <= set(spec_files)
    # Every file not run is listed with its reason.
    assert set(spec_files) - set(conformance.SUPPORTED_FILES) <= set(conformance.UNSUPPORTED_FILES)


def test_the_reference_passes_the_conformance_tests(tallies):
    reference, _, _ = tallies
    _check(reference, conformance.REFERENCE_EXPECTED_FAILURES, "reference")


def test_the_fast_path_passes_the_conformance_tests(tallies):
    _, fast, _ = tallies
    _check(fast, conformance.FAST_EXPECTED_FAILURES, "fast path")


def test_both_engines_run_the_same_tests(tallies):
    reference, fast, _ = tallies
    # The fast path leaves out only the tests whose bindings its interface cannot give.
    extra = set(fast.unsupported) - set(reference.unsupported)
    assert all("Python value" in fast.unsupported[test] for test in extra)
    assert set(reference.unsupported) <= set(fast.unsupported)


_WRONG = """
section {
  name: "wrong"
  test { name: "value" expr: "1 + 1" value: { int64_value: 3 } }
  test { name: "type" expr: "2" value: { uint64_value: 2 } }
  test { name: "double" expr: "2" value: { double_value: 2 } }
  test { name: "error" expr: "1 + 1" eval_error { errors: { message: "x" } } }
  test { name: "no_error" expr: "1 / 0" value: { int64_value: 0 } }
  test { name: "bool" expr: "true" value: { bool_value: false } }
  test { name: "list" expr: "[1, 2]" value: { list_value: { values: { int64_value: 2 } } } }
  test { name: "string" expr: "'a\\\\u00e9'" value: { string_value: "a\\303\\251x" } }
  test { name: "nan" expr: "1.0" value: { double_value: nan } }
  test { name: "binding" expr: "x + 1" value: { int64_value: 1 }
         bindings { key: "x" value { value { int64_value: 1 } } } }
}
"""

_RIGHT = """
section {
  name: "right"
  test { name: "value" expr: "1 + 1" value: { int64_value: 2 } }
  test { name: "type" expr: "2u" value: { uint64_value: 2 } }
  test { name: "error" expr: "1 / 0" eval_error { errors: { message: "divide by zero" } } }
  test { name: "string" expr: "'a\\\\u00e9'" value: { string_value: "a\\303\\251" } }
  test { name: "bytes" expr: "b'\\\\xff'" value: { bytes_value: "\\377" } }
  test { name: "nan" expr: "0.0 / 0.0" value: { double_value: nan } }
  test { name: "map" expr: "{1: 'a'}" value: { map_value: { entries { key: { int64_value: 1 }
         value: { string_value: "a" } } } } }
  test { name: "binding" expr: "x + 1" value: { int64_value: 2 }
         bindings { key: "x" value { value { int64_value: 1 } } } }
}
"""


@pytest.mark.parametrize("runner", [conformance.run_reference, conformance.run_fast])
def test_the_runner_tells_a_wrong_expectation(runner):
    wrong = list(conformance.cases({"wrong": _WRONG}))
    right = list(conformance.cases({"right": _RIGHT}))
    assert len(wrong) == 10 and len(right) == 8
    assert [case.name for case in wrong if runner(case)[0]] == []
    assert [case.name for case in right if not runner(case)[0]] == []


def test_the_text_format_reader():
    message = conformance.parse_text(
        '# a comment\nname: "a" "b"  n: -5 f: 1e+3 w: NULL_VALUE list: [1, 2]\n'
        "inner < k: '\\x41\\101\\n' > inner { k: 'x' }")
    assert message == [("name", b"ab"), ("n", -5), ("f", 1000.0), ("w", "NULL_VALUE"),
                       ("list", 1), ("list", 2), ("inner", [("k", b"AA\n")]),
                       ("inner", [("k", b"x")])]
