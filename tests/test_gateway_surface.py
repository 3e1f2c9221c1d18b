"""The gateway's standard surfaces, against real processes: list filtering
(``params.filter`` of the draft MCP proposal for list filtering, on the four
list methods, with its limits, its capability and its cursors), names as the
host wants them (``--names bare``) and the policy's ``[[rename]]``.

The lists are read by a raw JSON-RPC client over stdio (``_raw_mcp.py``):
the SDKs' typed clients drop ``params.filter`` and a capability's
``filtering``. The upstreams are ``_gateway_raw_upstream.py``, which record
what they ran.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

fastmcp = pytest.importorskip("fastmcp", reason="needs the gateway extra")

from _gateway import (  # noqa: E402
    DEADLINE,
    change_tools,
    ran,
    raw_http,
    raw_setup,
    serve_http,
    toolfilter,
)
from _raw_mcp import RawStdio, RpcError  # noqa: E402
from fastmcp import Client  # noqa: E402
from test_gateway_hardening import DESTROY, READ, tool  # noqa: E402

from toolfilter_fast import Policy, Tool  # noqa: E402
from toolfilter_fast.config import parse_toml  # noqa: E402
from toolfilter_fast.reference.name_patterns import NamePatterns  # noqa: E402


def gateway(paths, tmp_path, *extra):
    """``toolfilter serve`` over stdio, read by the raw client."""
    return RawStdio([sys.executable, "-m", "toolfilter_fast", "serve", "--config",
                     str(paths["policy"]), "--servers", str(paths["servers"]), *extra],
                    log=tmp_path / "serve.log")


def names_of(result, key="tools", field="name"):
    return [item[field] for item in result[key]]


def refused(client, method, params):
    with pytest.raises(RpcError) as raised:
        client.request(method, params)
    return raised.value.code, raised.value.message


def call_text(client, name):
    result = client.request("tools/call", {"name": name, "arguments": {}})
    return result.get("isError", False), result["content"][0]["text"]


GIT = {"git": {"tools": [tool("git_log", READ), tool("git_diff", READ), tool("git_push", {"destructiveHint": False}),
                         tool("git_reset", DESTROY), tool("search_code", READ)],
               "prompts": [{"name": "git_summary"}, {"name": "review"}],
               "resources": [{"uri": "file:///repo/README.md", "name": "readme"},
                             {"uri": "file:///repo/src/main.py", "name": "main"},
                             {"uri": "note://todo", "name": "readme_todo"}],
               "templates": [{"uriTemplate": "file:///repo/{path}", "name": "file"},
                             {"uriTemplate": "note://{id}", "name": "note"}]}}
GIT_POLICY = "[filter]\nexclude = [{annotations = {destructiveHint = true}}]\n"


# --- list filtering ---------------------------------------------------------------------


def test_a_filter_narrows_what_the_policy_shows_and_never_widens_it(tmp_path):
    paths = raw_setup(tmp_path, GIT, GIT_POLICY)
    with gateway(paths, tmp_path) as client:
        capabilities = client.initialize()["capabilities"]
        everything = names_of(client.request("tools/list"))
        filtered = names_of(client.request("tools/list", {"filter": {
            "namePatterns": ["git__git_????", "git__git_re*", "git__search_*", "nothing"]}}))
        same = [names_of(client.request("tools/list", {"filter": f})) for f in (
            {}, {"namePatterns": []}, {"uriPatterns": ["x"]}, {"com.example/tags": ["a"]})]
        # Filtered out but shown by the policy: still callable. Hidden: unknown.
        push = call_text(client, "git__git_push")
        reset = call_text(client, "git__git_reset")
        never = call_text(client, "git__never_was")
    assert capabilities["tools"]["filtering"] == {"supported": ["namePatterns"]}
    assert capabilities["prompts"]["filtering"] == {"supported": ["namePatterns"]}
    assert capabilities["resources"]["filtering"] == {"supported": ["namePatterns",
                                                                    "uriPatterns"]}
    assert everything == ["git__git_diff", "git__git_log", "git__git_push", "git__search_code"]
    # git_reset matches git_re* too, but the policy hides it.
    assert filtered == ["git__git_diff", "git__git_push", "git__search_code"]
    assert same == [everything] * 4
    assert push == (False, "ran git_push")
    assert reset == (True, never[1].replace("git__never_was", "git__git_reset"))
    assert [name for _, name in ran(tmp_path, "git")] == ["git_push"]


def test_prompts_resources_and_templates_are_filtered_by_name_and_uri(tmp_path):
    paths = raw_setup(tmp_path, GIT, GIT_POLICY)
    with gateway(paths, tmp_path) as client:
        client.initialize()
        prompts = names_of(client.request("prompts/list", {"filter": {
            "namePatterns": ["git__git_*"]}}), "prompts")
        by_uri = names_of(client.request("resources/list", {"filter": {
            "uriPatterns": ["file://git//repo/*"]}}), "resources", "uri")
        # Both fields: AND across them; namePatterns reads the resource's name.
        both = names_of(client.request("resources/list", {"filter": {
            "uriPatterns": ["*://git/*"], "namePatterns": ["readme*"]}}), "resources", "uri")
        templates = names_of(client.request("resources/templates/list", {"filter": {
            "uriPatterns": ["note://*"]}}), "resourceTemplates", "uriTemplate")
        named = names_of(client.request("resources/templates/list", {"filter": {
            "namePatterns": ["fil?"]}}), "resourceTemplates", "uriTemplate")
    assert prompts == ["git__git_summary"]
    # (file:///repo/... of server git is file://git//repo/...: scheme://SERVER/rest.)
    assert by_uri == ["file://git//repo/README.md", "file://git//repo/src/main.py"]
    assert both == ["file://git//repo/README.md", "note://git/todo"]
    assert templates == ["note://git/{id}"]
    assert named == ["file://git//repo/{path}"]


def test_the_limits_and_bad_filters_are_refused_with_invalid_params(tmp_path):
    paths = raw_setup(tmp_path, GIT, "")
    with gateway(paths, tmp_path) as client:
        client.initialize()
        at_limits = client.request("tools/list", {"filter": {
            "namePatterns": ["x" * 256] + [f"git__git_{i}*" for i in range(99)]}})
        answers = [refused(client, "tools/list", {"filter": f}) for f in (
            {"namePatterns": [f"p{i}" for i in range(101)]},
            {"namePatterns": ["y" * 257]},
            {"namePatterns": ["ok", 7]},
            {"namePatterns": "git_*"},
            ["git_*"],
        )]
        uri_count = refused(client, "resources/list", {"filter": {
            "uriPatterns": ["u"] * 101}})
        # uriPatterns is no field of tools/list: ignored, not checked.
        ignored = names_of(client.request("tools/list", {"filter": {"uriPatterns": [1] * 500}}))
    assert at_limits["tools"] == []
    assert answers == [
        (-32602, "Too many patterns: 101 exceeds maximum of 100"),
        (-32602, f"Invalid pattern in namePatterns: '{'y' * 80}...' \u2014 257 characters "
                 "exceeds maximum of 256"),
        (-32602, "Invalid pattern in namePatterns: a number \u2014 a pattern is a string"),
        (-32602, "Invalid filter field namePatterns: expected an array of strings, not a "
                 "string"),
        (-32602, "Invalid filter: expected an object, not an array"),
    ]
    assert uri_count == (-32602, "Too many patterns: 101 exceeds maximum of 100")
    assert len(ignored) == 5


def test_the_cursor_is_bound_to_the_filter(tmp_path):
    tools = [tool(f"t{i:02}") for i in range(9)]
    paths = raw_setup(tmp_path, {"s": {"tools": tools, "prompts": [{"name": "p"}]}}, "")
    wanted = {"namePatterns": ["s__t0?", "s__t1?"]}
    with gateway(paths, tmp_path, "--page-size", "2") as client:
        client.initialize()
        pages, cursor = [], None
        while True:
            params = {"filter": dict(wanted)}
            if cursor is not None:
                params["cursor"] = cursor
            page = client.request("tools/list", params)
            pages.append(names_of(page))
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        first = client.request("tools/list", {"filter": wanted})
        reordered = client.request("tools/list", {"filter": {
            "namePatterns": ["s__t1?", "s__t0?", "s__t0?"], "x.example/ignored": 1},
            "cursor": first["nextCursor"]})
        changed = [refused(client, "tools/list", dict(params, cursor=first["nextCursor"]))
                   for params in ({"filter": {"namePatterns": ["s__t0?"]}}, {})]
        other_list = refused(client, "prompts/list", {"filter": wanted,
                                                      "cursor": first["nextCursor"]})
        forged = refused(client, "tools/list", {"cursor": "eyJvIjogMn0="})  # FastMCP's own form
    assert [name for page in pages for name in page] == [f"s__t{i:02}" for i in range(9)]
    assert all(len(page) <= 2 for page in pages) and len(pages) == 5
    assert names_of(reordered) == ["s__t02", "s__t03"]  # a set of patterns, ignored fields
    assert changed == [(-32602, "Filter parameters must not change between paginated "
                                "requests")] * 2
    assert other_list == (-32602, "Invalid cursor: it was given for tools/list, not "
                                  "prompts/list")
    assert forged == (-32602, "Invalid cursor: it was not given by this server")


def test_list_filtering_over_http(tmp_path):
    raw_setup(tmp_path, GIT, GIT_POLICY)
    served = serve_http(tmp_path)
    try:
        answers = asyncio.run(_http_lists(served.url))
    finally:
        assert served.stop() == 0
    capabilities, listed, error = answers
    assert capabilities["tools"]["filtering"] == {"supported": ["namePatterns"]}
    assert listed == ["git__git_log"]
    assert error == {"code": -32602, "message": "Too many patterns: 101 exceeds maximum of 100"}


async def _http_lists(url):
    """initialize, a filtered tools/list and a refused one, as raw JSON-RPC over
    streamable HTTP (each answer an SSE event or a JSON body)."""
    import httpx

    async with httpx.AsyncClient(timeout=DEADLINE) as http:
        post = raw_http(http, url, "token-bob")
        init = await post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        await post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = await post({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {
            "filter": {"namePatterns": ["git__git_l*"]}}})
        error = await post({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {
            "filter": {"namePatterns": ["a"] * 101}}})
    return (init["result"]["capabilities"], [t["name"] for t in listed["result"]["tools"]],
            {key: error["error"][key] for key in ("code", "message")})


# --- names as the host wants them ----------------------------------------------------------

APPS = {"ui": {"tools": [tool("show_chart", READ), tool("export_csv", READ),
                         tool("drop_table", DESTROY)],
               "prompts": [{"name": "chart_help"}],
               "resources": [{"uri": "ui://chart/app.html", "name": "chart"}]},
        "db": {"tools": [tool("query", READ), tool("vacuum", DESTROY)]}}


def test_bare_names_are_the_upstreams_own_and_route_to_them(tmp_path):
    paths = raw_setup(tmp_path, APPS, GIT_POLICY)
    with gateway(paths, tmp_path, "--names", "bare") as client:
        client.initialize()
        tools = names_of(client.request("tools/list"))
        prompts = names_of(client.request("prompts/list"), "prompts")
        resources = names_of(client.request("resources/list"), "resources", "uri")
        calls = [call_text(client, name) for name in ("show_chart", "query", "ui__show_chart",
                                                      "drop_table", "never_was")]
        read = client.request("resources/read", {"uri": "ui://chart/app.html"})
        filtered = names_of(client.request("tools/list", {"filter": {
            "namePatterns": ["*_*"]}}))
    assert tools == ["export_csv", "show_chart", "query"]  # servers in order, each by name
    assert prompts == ["chart_help"] and resources == ["ui://chart/app.html"]
    assert calls[:2] == [(False, "ran show_chart"), (False, "ran query")]
    unknown = calls[4][1]
    assert calls[2] == (True, unknown.replace("never_was", "ui__show_chart"))  # no prefix
    assert calls[3] == (True, unknown.replace("never_was", "drop_table"))     # hidden
    assert read["contents"][0]["text"] == "read ui://chart/app.html"
    assert filtered == ["export_csv", "show_chart"]
    assert ran(tmp_path, "ui") == [("tools/call", "show_chart"),
                                   ("resources/read", "ui://chart/app.html")]
    assert ran(tmp_path, "db") == [("tools/call", "query")]


def test_bare_names_that_collide_at_start_up_are_refused(tmp_path):
    specs = {"a": {"tools": [tool("search", READ), tool("only_a", READ)]},
             "b": {"tools": [tool("search", READ)]}}
    paths = raw_setup(tmp_path, specs, "")
    result = toolfilter("serve", "--config", str(paths["policy"]), "--servers",
                        str(paths["servers"]), "--names", "bare", stdin=subprocess.DEVNULL)
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert result.returncode == 2, result.stderr
    assert errors == ["toolfilter serve: error: two tools would get one name: 'search' "
                      "(a/search, b/search): rename one with [[rename]] in the policy, or "
                      "serve --names prefixed"]
    assert "gateway ready" not in result.stderr
    # Prefixed, the same servers are fine.
    with gateway(paths, tmp_path) as client:
        client.initialize()
        assert names_of(client.request("tools/list")) == ["a__only_a", "a__search", "b__search"]


def test_a_collision_a_later_listing_brings_hides_both_with_a_warning(tmp_path):
    specs = {"a": {"tools": [tool("search", READ), tool("fetch", READ)]},
             "b": {"tools": [tool("lookup", READ)], "reread": True}}
    paths = raw_setup(tmp_path, specs, "")
    with gateway(paths, tmp_path, "--names", "bare") as client:
        client.initialize()
        before = names_of(client.request("tools/list"))
        change_tools(tmp_path, "b", [tool("lookup", READ), tool("search", READ)],
                     tmp_path / "serve.log")
        after = names_of(client.request("tools/list"))
        search = call_text(client, "search")
        never = call_text(client, "never_was")
        lookup = call_text(client, "lookup")
    assert before == ["fetch", "search", "lookup"]
    assert after == ["fetch", "lookup"]
    assert search == (True, never[1].replace("never_was", "search"))
    assert lookup == (False, "ran lookup")
    assert ran(tmp_path, "a") == []
    log = (tmp_path / "serve.log").read_text()
    assert log.count("tools a/search and b/search would all be named 'search': none is shown, "
                     "and a request for that name is answered as unknown") == 1


# --- [[rename]] -------------------------------------------------------------------------

GITHUB = {"github": {"tools": [
    tool("create_issue", {"destructiveHint": False}, "Creates an issue."),
    tool("list_issues", READ, "Lists issues."),
    tool("delete_repo", DESTROY, "Deletes a repository.")]}}
RENAME_POLICY = GIT_POLICY + """
[[rename]]
server = "github"
tool = "create_issue"
name = "new_issue"
description = "Opens an issue in one of the team's repositories."

[[rename]]
server = "github"
tool = "delete_repo"
name = "remove_repo"
"""


@pytest.mark.parametrize(("mode", "prefix"), [("prefixed", "github__"), ("bare", "")])
def test_a_renamed_tool_is_shown_and_called_by_its_new_name_only(tmp_path, mode, prefix):
    paths = raw_setup(tmp_path, GITHUB, RENAME_POLICY)
    with gateway(paths, tmp_path, "--names", mode) as client:
        client.initialize()
        listed = client.request("tools/list")["tools"]
        new = call_text(client, f"{prefix}new_issue")
        old = call_text(client, f"{prefix}create_issue")
        hidden = call_text(client, f"{prefix}remove_repo")   # the policy judges delete_repo
        never = call_text(client, f"{prefix}never_was")
        filtered = names_of(client.request("tools/list", {"filter": {
            "namePatterns": [f"{prefix}new_*"]}}))
    assert [(t["name"], t["description"]) for t in listed] == [
        (f"{prefix}new_issue", "Opens an issue in one of the team's repositories."),
        (f"{prefix}list_issues", "Lists issues.")]
    assert new == (False, "ran create_issue")
    assert old == (True, never[1].replace("never_was", "create_issue"))
    assert hidden == (True, never[1].replace("never_was", "remove_repo"))
    assert filtered == [f"{prefix}new_issue"]
    assert ran(tmp_path, "github") == [("tools/call", "create_issue")]


def test_a_rename_that_takes_a_listed_name_is_refused_at_start_up(tmp_path):
    policy = '[[rename]]\nserver = "github"\ntool = "create_issue"\nname = "list_issues"\n'
    paths = raw_setup(tmp_path, GITHUB, policy)
    result = toolfilter("serve", "--config", str(paths["policy"]), "--servers",
                        str(paths["servers"]), stdin=subprocess.DEVNULL)
    assert result.returncode == 2, result.stderr
    assert ("toolfilter serve: error: two tools would get one name: 'github__list_issues' "
            "(github/create_issue, github/list_issues): rename one with [[rename]]"
            ) in result.stderr.splitlines()


def test_bare_renames_of_two_servers_to_one_name_are_a_config_error(tmp_path):
    specs = {"a": {"tools": [tool("x", READ)]}, "b": {"tools": [tool("y", READ)]}}
    policy = ('[[rename]]\nserver = "a"\ntool = "x"\nname = "n"\n\n'
              '[[rename]]\nserver = "b"\ntool = "y"\nname = "n"\n')
    paths = raw_setup(tmp_path, specs, policy)
    result = toolfilter("serve", "--config", str(paths["policy"]), "--servers",
                        str(paths["servers"]), "--names", "bare", stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"toolfilter serve: error: {paths['policy']}: [[rename]] gives a/x and b/y the one name "
        "'n', which --names bare cannot tell apart")
    # Prefixed, a__n and b__n do not collide.
    with gateway(paths, tmp_path) as client:
        client.initialize()
        assert names_of(client.request("tools/list")) == ["a__n", "b__n"]


def test_a_rename_of_a_server_the_file_lacks_is_refused(tmp_path):
    policy = '[[rename]]\nserver = "gitlab"\ntool = "create_issue"\nname = "new_issue"\n'
    paths = raw_setup(tmp_path, GITHUB, policy)
    result = toolfilter("serve", "--config", str(paths["policy"]), "--servers",
                        str(paths["servers"]), stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"toolfilter serve: error: {paths['policy']}: rename[0] 'gitlab' names a server that "
        "is not in the servers file (its servers: github)")


def test_a_reload_brings_new_renames(tmp_path):
    paths = raw_setup(tmp_path, GITHUB, GIT_POLICY)
    served = serve_http(tmp_path)
    try:
        async def listing():
            async with Client(served.url, auth="token-bob", timeout=DEADLINE) as client:
                return [t.name for t in await client.list_tools()]

        before = asyncio.run(listing())
        paths["policy"].write_text(RENAME_POLICY)
        mark = len(served.text())
        served.process.send_signal(signal.SIGHUP)
        served.wait_for(r"reloaded \(SIGHUP\)", mark)
        after = asyncio.run(listing())
    finally:
        assert served.stop() == 0
    assert before == ["github__create_issue", "github__list_issues"]
    # In the upstream's order of its own names: a rename moves no tool.
    assert after == ["github__new_issue", "github__list_issues"]


# --- a fuzzer: the filtered listing is the policy's selection, narrowed by the reference -----

FUZZ_POLICY = ('[filter]\nexclude = [{annotations = {destructiveHint = true}}, "raw/*_"]\n\n'
               '[budget]\nmax_tools = 5\n')
_chars = "ab_?*/:\x00İ\u212a."
_fuzz_names = st.lists(st.text(alphabet="ab_/:\x00İ\u212a.*?", min_size=1, max_size=5),
                       max_size=7, unique=True)
_fuzz_patterns = st.lists(st.one_of(
    st.text(alphabet=_chars, max_size=6),
    st.builds(lambda rest: f"raw__{rest}", st.text(alphabet=_chars, max_size=4))),
    max_size=4)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    directory = tmp_path_factory.mktemp("surface-fuzz")
    paths = raw_setup(directory, {"raw": {"tools": [], "reread": True}}, FUZZ_POLICY)
    with gateway(paths, directory) as client:
        client.initialize()
        yield directory, client


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(names=_fuzz_names, hints=st.lists(st.sampled_from([READ, DESTROY, None]), min_size=7,
                                         max_size=7),
       name_patterns=_fuzz_patterns)
def test_a_filtered_listing_is_the_policy_selection_narrowed(fuzzed, names, hints,
                                                             name_patterns):
    directory, client = fuzzed
    tools = [tool(name, hint) for name, hint in zip(names, hints, strict=False)]
    change_tools(directory, "raw", tools, directory / "serve.log")
    catalog = [Tool("raw", t["name"], annotations=t.get("annotations"),
                    input_schema=t["inputSchema"]) for t in sorted(tools,
                                                                   key=lambda t: t["name"])]
    shown = [f"raw__{t.name}" for t in Policy.from_config(parse_toml(FUZZ_POLICY)).select(
        catalog).tools]
    reference = NamePatterns(name_patterns)
    expected = [name for name in shown if not name_patterns or reference.is_match(name)]
    listed = names_of(client.request("tools/list", {"filter": {"namePatterns": name_patterns}}))
    assert listed == expected
