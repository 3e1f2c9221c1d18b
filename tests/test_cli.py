"""The ``toolfilter`` command, run as a subprocess on files the tests write."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("toolfilter")
ANSI = "\x1b["

CONFIG = """\
[filter]
include = ["github/*", "fs/read_*", {server = "db", regex = "^select_"}]
exclude = ["*/delete_*", {callable = "policy:admins_merge"}]
"""

POLICY = """\
def admins_merge(tool, ctx):
    if ctx is None:
        raise LookupError("no ctx")
    return tool.name == "merge_pr" and ctx.get("role") != "admin"
"""

GITHUB_TOOLS_LIST = {"tools": [
    {"name": "create_issue", "description": "Open an issue", "inputSchema": {"type": "object"}},
    {"name": "Delete-Repo"},
    {"name": "merge_pr"},
]}

RECORDS = [
    {"server_id": "fs", "name": "read_file"},
    {"server_id": "fs", "name": "write_file"},
    {"server_id": "db", "name": "select_rows"},
    {"server_id": "GitHub", "name": "create_issue"},
]


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(extra)
    return env


def run(*args, cwd, stdin=None, env=None):
    feed = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    return subprocess.run(
        [str(SCRIPT), *map(str, args)], cwd=cwd, capture_output=True, text=True,
        env=env or clean_env(), timeout=120, **feed,
    )


@pytest.fixture
def work(tmp_path):
    (tmp_path / "filters.toml").write_text(CONFIG)
    (tmp_path / "policy.py").write_text(POLICY)
    (tmp_path / "github.json").write_text(json.dumps(GITHUB_TOOLS_LIST))
    (tmp_path / "catalog.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return tmp_path


def assert_clean_error(result, *fragments):
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert result.stderr.strip(), "an error message on stderr"
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def text_rows(stdout):
    return [line.split("\t") for line in stdout.splitlines()]


# --- installation --------------------------------------------------------------------


def test_console_script_is_installed():
    assert SCRIPT.exists(), "pip install . must install the toolfilter script"


@pytest.mark.parametrize("command", [[], ["demo"], ["check"], ["explain"], ["bench"]])
def test_help_on_every_subcommand(tmp_path, command):
    result = run(*command, "--help", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("usage: toolfilter")
    assert "--help" in result.stdout


def test_python_dash_m_runs_the_cli(tmp_path):
    result = subprocess.run([sys.executable, "-m", "toolfilter_fast", "--version"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("toolfilter ")


def test_no_subcommand_prints_help_and_exits_2(tmp_path):
    result = run(cwd=tmp_path)
    assert result.returncode == 2
    assert "demo" in result.stderr and "check" in result.stderr


# --- demo ----------------------------------------------------------------------------


def test_demo_shows_visible_and_hidden_with_reasons(tmp_path):
    result = run("demo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert ANSI not in result.stdout  # piped: plain text
    rows = {(r[0], r[1]): r[2] for r in text_rows(result.stdout) if len(r) == 3}
    assert rows[("hidden", "github/Delete-Repo")].startswith('exclude[0] "*/delete_*" matches')
    assert rows[("visible", "github/create_issue")] == 'include[0] "github/*" matches'
    assert "would match loosely" in rows[("hidden", "GitHub/create_issue")]
    assert "raised KeyError" in rows[("hidden", "pagerduty/ack_incident")]
    assert ("visible", "pagerduty/ack_incident") in rows  # for the on-call admin


def test_demo_json(tmp_path):
    result = run("demo", "--format", "json", cwd=tmp_path)
    doc = json.loads(result.stdout)
    assert [run_["ctx"]["role"] for run_ in doc["runs"]] == ["user", "admin"]
    merge = next(t for t in doc["runs"][0]["tools"] if t["name"] == "merge_pr")
    assert (merge["visible"], merge["step"]) == (False, "exclude_callable")


def test_demo_write_example_then_check_it(tmp_path):
    result = run("demo", "--write-example", "ex", cwd=tmp_path)
    assert result.returncode == 0
    assert sorted(p.name for p in (tmp_path / "ex").iterdir()) == [
        "catalog.jsonl", "ctx.json", "filters.toml"]
    result = run("check", "--config", "ex/filters.toml", "--ctx", "@ex/ctx.json",
                 "ex/catalog.jsonl", "--expect-hidden", "github/merge_pr", cwd=tmp_path)
    assert result.returncode == 0, result.stderr


# --- check ---------------------------------------------------------------------------


def test_check_tools_list_and_combined_catalogs(work):
    result = run("check", "--config", "filters.toml", "--ctx", '{"role": "user"}',
                 "github.json", "catalog.jsonl", cwd=work)
    assert result.returncode == 0, result.stderr
    rows = text_rows(result.stdout)
    assert [(r[0], r[1]) for r in rows] == [
        ("visible", "github/create_issue"),
        ("hidden", "github/Delete-Repo"),
        ("hidden", "github/merge_pr"),
        ("visible", "fs/read_file"),
        ("hidden", "fs/write_file"),
        ("visible", "db/select_rows"),
        ("hidden", "GitHub/create_issue"),
    ]
    assert rows[2][2] == 'exclude[1] {callable = "policy:admins_merge"} returned True'


def test_check_json_format(work):
    result = run("check", "--config", "filters.toml", "--format", "json", "github.json",
                 cwd=work)
    doc = json.loads(result.stdout)
    assert doc["summary"] == {"tools": 3, "visible": 0, "hidden": 3}
    # ctx is null: the exclude function raises, which hides (fails closed).
    first = doc["tools"][0]
    assert (first["name"], first["step"]) == ("create_issue", "exclude_callable")
    assert first["calls"][0]["error_type"] == "LookupError"
    assert first["calls"][0]["error_message"] == "no ctx"
    assert doc["config"] == "filters.toml" and doc["ctx"] is None


def test_check_jsonl_and_only(work):
    result = run("check", "--config", "filters.toml", "--ctx", "{}", "--format", "jsonl",
                 "--only", "visible", "catalog.jsonl", cwd=work)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [d["name"] for d in lines] == ["read_file", "select_rows"]
    assert all(d["visible"] for d in lines)


def test_check_server_id_from_flag_equals_and_stdin(work):
    result = run("check", "--config", "filters.toml", "--ctx", "{}", "--server-id", "fs",
                 "github.json", cwd=work)
    assert {r[1].split("/")[0] for r in text_rows(result.stdout)} == {"fs"}
    result = run("check", "--config", "filters.toml", "--ctx", "{}", "github=-", cwd=work,
                 stdin=json.dumps({"jsonrpc": "2.0", "id": 1, "result": GITHUB_TOOLS_LIST}))
    assert result.returncode == 0, result.stderr
    assert text_rows(result.stdout)[0][:2] == ["visible", "github/create_issue"]


def test_check_expectations_pass(work):
    result = run("check", "--config", "filters.toml", "--ctx", '{"role": "admin"}',
                 "github.json", "catalog.jsonl",
                 "--expect-visible", "github/merge_pr", "--expect-hidden", "github/Delete-Repo",
                 "--expect-hidden", "GitHub/create_issue", cwd=work)
    assert result.returncode == 0, result.stderr
    assert "expectations: 3 passed, 0 failed" in result.stderr


def test_check_expectations_fail_exit_1(work):
    result = run("check", "--config", "filters.toml", "--ctx", '{"role": "user"}',
                 "github.json", "--expect-visible", "github/merge_pr",
                 "--expect-hidden", "github/create_issue", "--expect-visible", "github/nope",
                 cwd=work)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert ("FAIL expected github/merge_pr visible, but it is hidden: exclude[1] "
            '{callable = "policy:admins_merge"} returned True') in result.stderr
    assert "FAIL expected github/create_issue hidden, but it is visible" in result.stderr
    assert "FAIL expected github/nope visible, but it is not in the catalog" in result.stderr
    assert "expectations: 0 passed, 3 failed" in result.stderr
    assert text_rows(result.stdout)  # the listing is still printed


def test_check_lone_surrogates_and_odd_names_do_not_crash(work):
    (work / "odd.jsonl").write_text(
        '{"server_id": "s", "name": "bad\\ud800name"}\n{"server_id": "a/b", "name": "x:y"}\n')
    result = run("check", "--config", "filters.toml", "--ctx", "{}", "odd.jsonl", cwd=work)
    assert result.returncode == 0, result.stderr
    assert "s/bad\\ud800name" in result.stdout
    result = run("check", "--config", "filters.toml", "--ctx", "{}", "--format", "json",
                 "odd.jsonl", cwd=work)
    assert json.loads(result.stdout)["tools"][0]["name"] == "bad\ud800name"


def test_check_progress_bar(work):
    result = run("check", "--config", "filters.toml", "--ctx", "{}", "--progress", "always",
                 "catalog.jsonl", cwd=work)
    assert result.returncode == 0
    assert "explaining [" in result.stderr and "100%" in result.stderr
    result = run("check", "--config", "filters.toml", "--ctx", "{}", "catalog.jsonl", cwd=work)
    assert "explaining" not in result.stderr  # small catalog, and stderr is not a terminal


@pytest.mark.parametrize(("args", "fragments"), [
    (["--config", "missing.toml", "catalog.jsonl"], ["missing.toml: no such file"]),
    (["--config", "filters.toml", "missing.json"], ["missing.json: no such file"]),
    (["--config", "filters.toml", "."], ["is a directory"]),
    (["--config", "filters.toml", "--format", "xml", "catalog.jsonl"],
     ["argument --format: invalid choice: 'xml'"]),
    (["--config", "filters.toml"], ["the following arguments are required: CATALOG"]),
    (["catalog.jsonl"], ["the following arguments are required: --config"]),
    (["--config", "filters.toml", "--frobnicate", "catalog.jsonl"],
     ["unrecognized arguments: --frobnicate"]),
    (["--config", "filters.toml", "--ctx", "{nope", "catalog.jsonl"], ["--ctx: invalid JSON"]),
    (["--config", "filters.toml", "--ctx", "@nope.json", "catalog.jsonl"],
     ["--ctx @nope.json: no such file"]),
    (["--config", "filters.toml", "--expect-visible", "noslash", "catalog.jsonl"],
     ["--expect-visible 'noslash': expected SERVER/TOOL"]),
    (["--config", "filters.toml", "--server-id", "x", "github.json", "catalog.jsonl"],
     ["--server-id names the server of a single catalog"]),
    (["--config", "filters.toml", "=github.json"], ["expected FILE or SERVER=FILE"]),
    (["--config", "filters.toml", "-"], ["needs a server id"]),
])
def test_check_bad_flags_and_files(work, args, fragments):
    assert_clean_error(run("check", *args, cwd=work, stdin='{"tools": []}'), *fragments)


@pytest.mark.parametrize(("config", "fragments"), [
    ('include = ["ok", "x/"]\n', ['bad.toml: include[1]: empty tool segment: "x/"']),
    ('include = [\n', ["bad.toml: invalid TOML"]),
    ('exlude = ["x"]\n', ["bad.toml: exlude: unknown top-level key"]),
    ('[filter]\nexclude = [{regex = "("}]\n', ["bad.toml: filter.exclude[0]: invalid regex"]),
    ('exclude = [{callable = "no_such_module_q:f"}]\n',
     ["bad.toml: exclude[0]: cannot import module 'no_such_module_q'"]),
    ('exclude = [{callable = "policy:nope"}]\n',
     ["bad.toml: exclude[0]: 'policy' has no attribute 'nope'"]),
    ('[focus_lens]\nmax_tools = -3\n', ["bad.toml: focus_lens.max_tools: expected an integer"]),
    ('[[tool_filter_groups]]\nmode = "Always"\n',
     ["bad.toml: tool_filter_groups[0].mode: unknown mode"]),
])
def test_check_bad_config_files(work, config, fragments):
    (work / "bad.toml").write_text(config)
    assert_clean_error(run("check", "--config", "bad.toml", "catalog.jsonl", cwd=work),
                       *fragments)


def test_config_warnings_are_one_line_each(work):
    (work / "groups.toml").write_text(
        'include = ["fs/*"]\n[[tool_filter_groups]]\ntools = ["fs__*"]\nnote = "x"\n')
    result = run("check", "--config", "groups.toml", "catalog.jsonl", cwd=work)
    assert result.returncode == 0
    assert result.stderr == ("toolfilter check: warning: groups.toml: tool_filter_groups[0]: "
                             "unknown keys ignored: 'note'\n")


@pytest.mark.parametrize(("name", "content", "fragments"), [
    ("a.json", '{"tools": [{"name": "x"}, {"name": 3}]}',
     ["a.json: tools[1]: 'name' must be a string, not integer"]),
    ("a.json", '{"tools": [{"description": "x"}]}', ["a.json: tools[0]: a tool needs a 'name'"]),
    ("a.json", '{"tools": "x"}', ["'tools' must be an array"]),
    ("a.json", '{"tool": []}', ["expected an MCP tools/list result"]),
    ("a.json", '"just a string"', ["not string"]),
    ("a.json", '{"tools": [}', ["a.json: invalid JSON"]),
    ("a.json", '[{"server_id": "s", "name": "x"}, {"name": "y"}]',
     ["a.json: record [1]: a combined-catalog record needs 'server_id'"]),
    ("a.jsonl", '{"server_id": "s", "name": "x"}\n\n{oops}\n',
     ["a.jsonl:3: invalid JSON Lines record"]),
    ("a.jsonl", '{"server_id": "s", "name": "x"}\n[1]\n', ["a.jsonl:2: a tool is a JSON object"]),
    ("a.json", '{"jsonrpc": "2.0", "id": 1, "error": {"code": -1}}',
     ["a JSON-RPC error response"]),
    ("a.json", b'\xff\xfe', ["not UTF-8"]),
])
def test_check_bad_catalog_files(work, name, content, fragments):
    path = work / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert_clean_error(run("check", "--config", "filters.toml", name, cwd=work), *fragments)


# --- explain -------------------------------------------------------------------------


def test_explain_text(work):
    result = run("explain", "--config", "filters.toml", "--ctx", '{"role": "user"}',
                 "github/DELETE.repo", "GitHub/create_issue", cwd=work)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "github/DELETE.repo: hidden" in out
    assert 'exclude[0] "*/delete_*" matches (loose: server "github", name "delete_repo")' in out
    assert "step     static_exclude" in out
    assert "GitHub/create_issue: hidden" in out
    assert 'include[0] "github/*" would match loosely' in out
    # The static include miss decided it: the exclude function was not called.
    assert "policy:admins_merge" not in out.split("GitHub/create_issue: hidden", 1)[1]


def test_explain_json_and_catalog_record(work):
    (work / "desc_policy.py").write_text(
        "def documented(tool, ctx):\n    return bool(tool.description)\n")
    (work / "doc.toml").write_text('include = [{callable = "desc_policy:documented"}]\n')
    result = run("explain", "--config", "doc.toml", "--format", "json", "--catalog",
                 "github.json", "github/create_issue", "github/merge_pr", cwd=work)
    assert result.returncode == 0, result.stderr
    first, second = json.loads(result.stdout)
    assert (first["visible"], first["step"]) == (True, "include_callable")
    assert (second["visible"], second["step"]) == (False, "no_include_match")
    result = run("explain", "--config", "doc.toml", "--catalog", "github.json", "github/nope",
                 cwd=work)
    assert_clean_error(result, "'github/nope' is not in the given catalogs")


@pytest.mark.parametrize(("args", "fragments"), [
    (["--config", "filters.toml", "noslash"], ["expected SERVER/TOOL"]),
    (["--config", "filters.toml", "/x"], ["expected SERVER/TOOL"]),
    (["--config", "filters.toml"], ["required: SERVER/TOOL"]),
    (["github/x"], ["required: --config"]),
    (["--config", "nope.toml", "github/x"], ["nope.toml: no such file"]),
    (["--config", "filters.toml", "--format", "yaml", "github/x"], ["invalid choice: 'yaml'"]),
])
def test_explain_bad_flags(work, args, fragments):
    assert_clean_error(run("explain", *args, cwd=work), *fragments)


# --- bench ---------------------------------------------------------------------------


def test_bench_small_run_json(tmp_path):
    result = run("bench", "--sizes", "300", "--counts", "5,10", "--format", "json",
                 "--progress", "always", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["sizes"], doc["counts"]) == ([300], [5, 10])
    baselines = {row["baseline"] for row in doc["rows"]}
    assert {"reference", "fnmatch per pattern", "joined re alternation"} <= baselines
    assert all(row["correct"] for row in doc["rows"])  # every baseline gave the same answer
    assert all(row["ratio"] > 0 for row in doc["rows"])
    assert "bench [" in result.stderr and "100% 10/10 done" in result.stderr


@pytest.mark.parametrize(("args", "fragment"), [
    (["--sizes", "ten"], "--sizes 'ten': expected comma-separated whole numbers"),
    (["--counts", "10,0"], "--counts '10,0': every number must be at least 1"),
    (["--format", "csv"], "invalid choice: 'csv'"),
])
def test_bench_bad_flags(tmp_path, args, fragment):
    assert_clean_error(run("bench", *args, cwd=tmp_path), fragment)


# --- terminals and colours -----------------------------------------------------------


def run_in_pty(args, cwd, env, columns=None):
    """Runs the command with stdout and stderr on a pseudo-terminal (``columns`` wide,
    when given); returns its output."""
    leader, follower = pty.openpty()
    if columns is not None:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen([str(SCRIPT), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_terminal_gets_colours_and_a_table(work):
    out = run_in_pty(["check", "--config", "filters.toml", "--ctx", "{}", "catalog.jsonl"],
                     work, clean_env())
    assert ANSI in out
    assert "STATUS" in out and "TOOL" in out and "WHY" in out
    assert "4 tools: 2 visible, 2 hidden" in out


def test_no_color_on_a_terminal_keeps_the_table(work):
    out = run_in_pty(["check", "--config", "filters.toml", "--ctx", "{}", "catalog.jsonl"],
                     work, clean_env(NO_COLOR="1"))
    assert ANSI not in out
    assert "STATUS" in out


def test_color_always_when_piped(work):
    result = run("check", "--config", "filters.toml", "--ctx", "{}", "--color", "always",
                 "--format", "table", "catalog.jsonl", cwd=work)
    assert ANSI in result.stdout
    assert result.stdout.splitlines()[0].count("STATUS") == 1


def test_the_table_keeps_to_the_width_of_the_terminal(tmp_path):
    """``toolfilter demo`` on a terminal 72 columns wide: long reasons wrap inside
    their column, and no row of the table is wider than the terminal."""
    env = {k: v for k, v in clean_env().items() if k != "COLUMNS"}
    out = run_in_pty(["demo"], tmp_path, env, columns=72)
    plain = [re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", line).rstrip("\r") for line in out.splitlines()]
    start = next(i for i, line in enumerate(plain) if line.startswith("STATUS"))
    end = next(i for i, line in enumerate(plain) if i > start and line.endswith("hidden"))
    rows = plain[start:end]
    assert len(rows) > 18  # 17 tools and the header, some tools on more than one line
    assert max(len(line) for line in rows) <= 72


def test_progress_bar_on_big_catalogs_on_a_terminal(work):
    count = 100_001
    with open(work / "big.jsonl", "w") as out:
        for i in range(count):
            out.write(f'{{"server_id": "fs", "name": "t{i}"}}\n')
    out = run_in_pty(["check", "--config", "filters.toml", "--ctx", "{}", "--format", "jsonl",
                      "--only", "visible", "big.jsonl"], work, clean_env())
    assert "explaining [" in out and f"{count:,}/{count:,}" in out
