"""The command with policies: check and explain with --message and --focus,
and lint (findings and --deny-visible assertions), on the example catalogs."""

from __future__ import annotations

import json
import pathlib
import sys

from toolfilter_fast import Policy
from toolfilter_fast.cli import main
from toolfilter_fast.cli.catalog_files import read_catalog

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples" / "policy"
CATALOGS = [str(EXAMPLES / name) for name in ("github.json", "fs.json", "ui.json")]
POLICY = str(EXAMPLES / "policy.toml")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def by_tool(out):
    return {tool["server_id"] + "/" + tool["name"]: tool for tool in json.loads(out)["tools"]}


def test_check_prints_the_stage_of_every_tool(capsys):
    code, out, _ = run(capsys, "check", "--config", POLICY, "--ctx", '{"role": "user"}',
                       "--message", "hello", "--focus", "demo:search", "--format", "json", *CATALOGS)
    assert code == 0
    tools = by_tool(out)
    assert json.loads(out)["stages"] == ["visibility", "groups", "focus", "budget"]
    assert tools["github/get_issue"]["stage"] is None and tools["github/get_issue"]["visible"]
    assert tools["github/delete_repository"]["stage"] == "visibility"
    assert tools["fs/read_file"]["stage"] == "groups"  # no file word in the message
    assert tools["ui/demo.results.open"]["stage"] == "focus"
    assert not tools["ui/demo.results.open"]["visible"]
    assert tools["ui/demo.results.open"]["reason"] == (
        "hidden: 'demo.results.open' is a tool of session 'demo' but not of widget 'search'")
    _, text, _ = run(capsys, "check", "--config", POLICY, "--message", "a file", "--format",
                     "text", *CATALOGS)
    lines = {line.split("\t")[2]: line.split("\t") for line in text.splitlines()}
    assert lines["fs/read_file"][:2] == ["visible", "kept"]
    assert lines["github/admin_add_collaborator"][:2] == ["hidden", "visibility"]


def test_check_expectations_use_the_whole_policy(capsys):
    code, _, err = run(capsys, "check", "--config", POLICY, "--message", "hello",
                       "--expect-hidden", "fs/read_file", "--expect-visible", "github/get_me",
                       "--format", "json", *CATALOGS)
    assert code == 0, err
    code, _, err = run(capsys, "check", "--config", POLICY, "--message", "hello",
                       "--expect-visible", "fs/read_file", "--format", "json", *CATALOGS)
    assert code == 1 and "[groups]" not in err and "groups" in err


def test_explain_names_the_stage(capsys):
    code, out, _ = run(capsys, "explain", "--config", POLICY, "--catalog", CATALOGS[1],
                       "--message", "hello", "fs/read_file")
    assert code == 0
    assert "stage    groups" in out
    code, out, _ = run(capsys, "explain", "--config", POLICY, "--format", "json",
                       "--catalog", CATALOGS[0], "github/get_issue")
    assert json.loads(out)[0]["stage"] is None


def test_bad_focus_is_a_usage_error(capsys):
    code, _, err = run(capsys, "check", "--config", POLICY, "--focus", "a.b:c", *CATALOGS)
    assert code == 2 and "--focus" in err


def test_lint_findings(capsys, tmp_path):
    config = tmp_path / "p.toml"
    config.write_text(
        '[filter]\n'
        'include = ["GitHub/*", "github/get_*", "github/get_issue", "nothing/here", '
        '{annotations = {readOnlyHint = true}}]\n'
        'exclude = ["*/delete_*", "github/delete_file", {cel = "tool.name == \\"zzz\\""}]\n'
    )
    code, out, _ = run(capsys, "lint", "--config", str(config), "--format", "json", *CATALOGS)
    assert code == 0
    found = {(f["kind"], f["where"]) for f in json.loads(out)["findings"]}
    assert ("loose-only", "filter.include[0]") in found
    assert ("shadowed", "filter.include[2]") in found
    assert ("unused", "filter.include[3]") in found
    assert ("shadowed", "filter.exclude[1]") in found
    assert ("unused", "filter.exclude[2]") in found
    assert not any(where == "filter.include[1]" for _, where in found)
    code, _, _ = run(capsys, "lint", "--config", str(config), "--strict", *CATALOGS)
    assert code == 1


def test_lint_deny_visible(capsys, tmp_path):
    config = tmp_path / "p.toml"
    config.write_text('[filter]\nexclude = ["*/delete_*"]\n')
    code, out, _ = run(capsys, "lint", "--config", str(config),
                       "--deny-visible", "annotations: destructiveHint", *CATALOGS)
    assert code == 1
    assert "DENIED" in out and "github/merge_pull_request" in out and "github/delete_file" not in out
    code, out, _ = run(capsys, "lint", "--config", POLICY, "--ctx", '{"role": "admin"}',
                       "--deny-visible", "annotations: destructiveHint",
                       "--deny-visible", "cel: tool.name.startsWith('delete')", *CATALOGS)
    assert code == 0, out
    code, out, _ = run(capsys, "lint", "--config", POLICY, "--ctx", '{"role": "admin"}',
                       "--deny-visible", "github/admin_*", *CATALOGS)
    assert code == 1 and "github/admin_add_collaborator" in out
    for bad in ["annotations: readonly", "cel: tool.name ==", "no-slash"]:
        code, _, err = run(capsys, "lint", "--config", POLICY, "--deny-visible", bad, *CATALOGS)
        assert code == 2 and "--deny-visible" in err


def test_check_format_mcp_prints_the_visible_definitions_unchanged(capsys):
    code, out, _ = run(capsys, "check", "--config", POLICY, "--message", "hello",
                       "--format", "mcp", CATALOGS[0])
    assert code == 0
    listed = json.loads(out)["tools"]
    originals = {t["name"]: t for t in json.loads(pathlib.Path(CATALOGS[0]).read_text())["tools"]}
    assert listed and all(t == originals[t["name"]] for t in listed)
    assert [t["name"] for t in listed][:3] == ["get_me", "get_issue", "list_issues"]
    assert "delete_repository" not in {t["name"] for t in listed}


# --- one order wherever a budget applies ------------------------------------------------

BUDGET = '[filter]\nexclude = ["*/delete_*"]\n[budget]\nmax_tools = 20\n'


def _in_serving_order(tools, servers):
    """The gateway's order, written out: servers as ranked, each one's tools by name."""
    rank = {server: i for i, server in enumerate(servers)}
    return sorted(tools, key=lambda tool: (rank[tool.server_id], tool.name))


def _checked(capsys, *argv):
    code, out, err = run(capsys, "check", "--format", "json", *argv)
    assert code == 0, err
    return {(t["server_id"], t["name"]) for t in json.loads(out)["tools"] if t["visible"]}


def _exported(capsys, *argv):
    code, out, err = run(capsys, "export", "--format", "claude-code", *argv)
    assert code == 0, err
    return {tuple(rule.removeprefix("mcp__").split("__", 1))
            for rule in json.loads(out)["permissions"]["allow"]}


def _servers_file(path, names):
    path.write_text(json.dumps({"mcpServers": {
        name: {"url": f"https://{name}.example/mcp"} for name in names}}))
    return str(path)


def test_a_budget_keeps_the_same_tools_through_check_export_and_select(capsys, tmp_path):
    config = tmp_path / "budget.toml"
    config.write_text(BUDGET)
    policy = Policy.from_file(config)
    tools = [tool for path in CATALOGS for tool in read_catalog(path)]
    for catalogs, servers in [(CATALOGS, ["github", "fs", "ui"]),
                              (CATALOGS[::-1], ["ui", "fs", "github"])]:
        kept = policy.select(_in_serving_order(tools, servers)).tools
        want = {(tool.server_id, tool.name) for tool in kept}
        assert len(want) == 20
        assert _checked(capsys, "--config", str(config), *catalogs) == want
        assert _exported(capsys, "--config", str(config), *catalogs) == want
    # The catalogs' own order (not each server's tools by name) keeps others.
    assert {(t.server_id, t.name) for t in policy.select(tools).tools} != want


def test_a_servers_file_orders_the_servers_as_serve_does(capsys, tmp_path):
    config = tmp_path / "budget.toml"
    config.write_text(BUDGET)
    policy = Policy.from_file(config)
    tools = [tool for path in CATALOGS for tool in read_catalog(path)]
    order = ["ui", "fs", "github"]
    servers = _servers_file(tmp_path / "servers.json", order)
    want = {(t.server_id, t.name) for t in policy.select(_in_serving_order(tools, order)).tools}
    # The catalogs given in another order (as a shell glob gives them): the file decides.
    assert _checked(capsys, "--config", str(config), "--servers", servers, *CATALOGS) == want
    assert _exported(capsys, "--config", str(config), "--servers", servers, *CATALOGS) == want
    # lint's --deny-visible judges the whole policy in the same order.
    code, out, _ = run(capsys, "lint", "--config", str(config), "--servers", servers, "--format",
                       "json", "--deny-visible", "github/*", *CATALOGS)
    denied = next(f for f in json.loads(out)["findings"] if f["kind"] == "denied")
    assert code == 1
    assert {tuple(n.split("/", 1)) for n in denied["tools"]} == {p for p in want if p[0] == "github"}


def test_the_export_header_says_what_the_servers_file_lacks(capsys, tmp_path):
    config = tmp_path / "static.toml"
    config.write_text('[filter]\nexclude = ["*/delete_*"]\n')
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {
        "github": {"command": sys.executable, "args": ["-c", "pass"]},
        "fs": {"url": "https://fs.example/mcp"}}}))
    code, out, err = run(capsys, "export", "--config", str(config), "--format", "openai",
                         "--servers", str(servers), *CATALOGS)
    assert code == 0, err
    doc = json.loads(out)
    assert [line for line in doc["//"] if "URL" in line] == [
        "server 'github' has no URL in the servers file (a stdio server there; give "
        "--server-url github=URL): a placeholder stands for it",
        "server 'ui' has no URL: it is not in the servers file (give --server-url ui=URL): "
        "a placeholder stands for it"]
    assert {t["server_label"]: t["server_url"] for t in doc["tools"]}["fs"] == (
        "https://fs.example/mcp")
    code, out, _ = run(capsys, "export", "--config", str(config), "--format", "anthropic",
                       CATALOGS[1])
    assert json.loads(out)["//"][-1] == (
        "server 'fs' has no URL here (give --servers or --server-url fs=URL): a placeholder "
        "stands for it")


# --- explain without a catalog --------------------------------------------------------


def test_explain_needs_the_catalog_when_the_policy_reads_hints(capsys, tmp_path):
    # check says github/get_issue is visible (it is read-only); explain without
    # the catalog used to say hidden, every hint taking its default.
    code, out, _ = run(capsys, "check", "--config", POLICY, "--format", "json", *CATALOGS)
    assert by_tool(out)["github/get_issue"]["visible"]
    code, out, err = run(capsys, "explain", "--config", POLICY, "github/get_issue")
    assert (code, out) == (2, "")
    assert err == (
        "toolfilter explain: error: --catalog is needed: filter.include[0] {annotations = "
        '{readOnlyHint = true}, trusted = ["github", "fs", "ui"]} reads the tool\'s '
        "annotations, which only its catalog record gives (without it every hint would take "
        "its MCP default, and explain would judge another tool than check does)\n")
    code, out, _ = run(capsys, "explain", "--config", POLICY, "--catalog", CATALOGS[0],
                       "github/get_issue")
    assert code == 0 and "github/get_issue: visible" in out
    cel = tmp_path / "cel.toml"
    cel.write_text("[filter]\nexclude = [{cel = 'tool.annotations.destructiveHint'}]\n")
    code, _, err = run(capsys, "explain", "--config", str(cel), "github/get_issue")
    assert code == 2 and "exclude[0] {cel = " in err and "reads the tool's annotations" in err


def test_explain_without_a_catalog_says_the_tool_is_bare(capsys, tmp_path):
    globs = tmp_path / "globs.toml"
    globs.write_text('[filter]\ninclude = ["github/*"]\n')
    code, out, _ = run(capsys, "explain", "--config", str(globs), "github/get_issue")
    assert code == 0 and "github/get_issue: visible" in out and "record" not in out
    cel = tmp_path / "cel.toml"
    cel.write_text("[filter]\ninclude = [{cel = 'tool.description != null'}]\n")
    code, out, _ = run(capsys, "explain", "--config", str(cel), "github/get_issue")
    assert code == 0 and "github/get_issue: hidden" in out
    assert ("  record   none (no --catalog): the tool is its server and name alone, without "
            "description, title, annotations or _meta\n") in out
    code, out, _ = run(capsys, "explain", "--config", str(cel), "--format", "json",
                       "github/get_issue")
    assert json.loads(out)[0]["record"] is False
    code, out, _ = run(capsys, "explain", "--config", str(cel), "--format", "json",
                       "--catalog", CATALOGS[0], "github/get_issue")
    assert json.loads(out)[0]["record"] is True and json.loads(out)[0]["visible"]


# --- lint: an include that an exclude always overrides ----------------------------------


def _lint(capsys, config, *argv):
    code, out, err = run(capsys, "lint", "--config", str(config), "--format", "json", *argv,
                         *CATALOGS)
    assert code in (0, 1), err
    return {f["where"]: f for f in json.loads(out)["findings"]}


def test_lint_reports_an_include_every_tool_of_which_an_exclude_hides(capsys, tmp_path):
    config = tmp_path / "p.toml"
    config.write_text(
        "[filter]\n"
        'include = ["github/*", "fs/*", {annotations = {readOnlyHint = true}, trusted = '
        '["github"]}, "ui/demo.*", "github/*e_repository", "fs/*_file"]\n'
        'exclude = [{annotations = {destructiveHint = true}, trusted = ["github"]}, '
        '"*/create_*", {cel = "ctx.role == \\"x\\""}]\n')
    found = _lint(capsys, config)
    # fs and ui are not trusted: every hint of theirs takes its default, and
    # destructiveHint's is true, so exclude[0] hides every tool they have.
    assert found["filter.include[1]"]["kind"] == "overridden"
    assert found["filter.include[1]"]["message"] == (
        '"fs/*" includes nothing: exclude[0] {annotations = {destructiveHint = true}, '
        'trusted = ["github"]} hides every tool it matches (4; exclude patterns are '
        "applied first)")
    assert found["filter.include[1]"]["tools"] == [
        "fs/read_file", "fs/list_directory", "fs/write_file", "fs/move_file"]
    assert found["filter.include[3]"]["kind"] == "overridden"
    # Two excludes together: each tool named by the first that hides it.
    assert found["filter.include[4]"]["message"] == (
        '"github/*e_repository" includes nothing: exclude[0] {annotations = {destructiveHint '
        '= true}, trusted = ["github"]} and exclude[1] "*/create_*" hide every tool it '
        "matches (2; exclude patterns are applied first)")
    assert found["filter.include[5]"]["kind"] == "overridden"
    # github's read-only tools are never destructive; github/* includes some.
    assert "filter.include[0]" not in found
    assert found["filter.include[2]"]["kind"] == "shadowed"  # by github/*, not overridden
    text = run(capsys, "lint", "--config", str(config), *CATALOGS)[1]
    assert "warning overridden: filter.include[1]: \"fs/*\" includes nothing" in text


def test_lint_reports_an_include_of_a_server_without_hints_under_a_destructive_exclude(
        capsys, tmp_path):
    # The case: a server that declares no hints is destructive by the
    # MCP defaults, so the exclude hides all of it, whatever it trusts.
    (tmp_path / "notes.json").write_text(json.dumps(
        {"tools": [{"name": "read_note"}, {"name": "write_note", "annotations": {}}]}))
    config = tmp_path / "p.toml"
    config.write_text('[filter]\ninclude = ["notes/*", "github/get_*"]\n'
                      "exclude = [{annotations = {destructiveHint = true}}]\n")
    code, out, _ = run(capsys, "lint", "--config", str(config), "--strict",
                       str(tmp_path / "notes.json"), CATALOGS[0])
    assert code == 1
    assert out.splitlines() == [
        'warning overridden: filter.include[0]: "notes/*" includes nothing: exclude[0] '
        "{annotations = {destructiveHint = true}} hides every tool it matches (2; exclude "
        "patterns are applied first)",
        "    notes/read_note", "    notes/write_note",
        "35 tools: 1 warning, 0 failed assertions"]


def test_lint_counts_only_what_an_exclude_always_hides(capsys, tmp_path):
    config = tmp_path / "p.toml"
    # A dynamic exclude (CEL reading ctx, a function) hides only for some
    # callers: it overrides nothing. An include that matches nothing is unused.
    config.write_text(
        "[filter]\n"
        'include = ["fs/*", "ui/*", "nothing/here"]\n'
        "exclude = [{cel = 'ctx == null || tool.server_id == \"fs\"'}, "
        "{cel = 'tool.server_id == \"ui\" && tool.annotations.readOnlyHint'}]\n")
    found = _lint(capsys, config)
    assert "filter.include[0]" not in found
    assert "filter.include[1]" not in found  # ui has tools that are not read-only
    assert found["filter.include[2]"]["kind"] == "unused"


DOCS_POLICY = """[filter]
include = [
  {annotations = {readOnlyHint = true}},
  {cel = 'ctx != null && "writer" in ctx.scopes'},
]
exclude = [{annotations = {destructiveHint = true}}]
"""


def test_lint_finds_nothing_overridden_in_the_examples(capsys, tmp_path):
    for ctx in ('{"role": "user"}', '{"role": "admin"}'):
        assert not any(f["kind"] == "overridden" for f in _lint(capsys, POLICY, "--ctx", ctx).values())
    config = tmp_path / "gateway.toml"
    config.write_text(DOCS_POLICY)
    assert not any(f["kind"] == "overridden" for f in _lint(capsys, config).values())
    assert run(capsys, "demo", "--write-example", str(tmp_path / "ex"))[0] == 0
    code, out, _ = run(capsys, "lint", "--config", str(tmp_path / "ex" / "filters.toml"),
                       str(tmp_path / "ex" / "catalog.jsonl"))
    assert (code, out) == (0, "17 tools: 0 warnings, 0 failed assertions\n")
