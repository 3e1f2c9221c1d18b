"""``toolfilter fetch`` and ``export`` against the same real upstreams as the
gateway's end-to-end tests, each export format checked against the shape its
host documents, and ``serve``'s bad input: one line, exit 2, no traceback."""

from __future__ import annotations

import json
import shlex
import socket
import sys

import pytest

fastmcp = pytest.importorskip("fastmcp", reason="needs the gateway extra")

from _gateway import (  # noqa: E402
    TOKENS,
    alive,
    toolfilter,
    upstream_pids,
    write_setup,
)
from _gateway_upstream import SCRIPT, TOOLS  # noqa: E402

from toolfilter_fast import Policy  # noqa: E402
from toolfilter_fast.cli.catalog_files import read_catalog  # noqa: E402
from toolfilter_fast.gateway.servers import (  # noqa: E402
    ServersError,
    read_servers,
    split_flat_name,
)
from toolfilter_fast.gateway.upstream import Upstream  # noqa: E402

# --- fetch -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fetched(tmp_path_factory):
    """The two upstreams fetched once, and a setup to export from."""
    directory = tmp_path_factory.mktemp("fetch")
    paths = write_setup(directory)
    result = toolfilter("fetch", "--servers", str(paths["servers"]), "-o",
                        str(directory / "catalogs"))
    return directory, paths, result


def test_fetch_writes_each_servers_tools_list_as_a_catalog(fetched):
    directory, _, result = fetched
    assert result.returncode == 0, result.stderr
    assert f"alpha: 4 tools -> {directory / 'catalogs' / 'alpha.json'}" in result.stderr
    assert f"beta: 3 tools -> {directory / 'catalogs' / 'beta.json'}" in result.stderr
    assert "fetched 2 of 2 servers" in result.stderr
    for server, names in TOOLS.items():
        doc = json.loads((directory / "catalogs" / f"{server}.json").read_text())
        assert [tool["name"] for tool in doc["tools"]] == list(names)
        assert all("inputSchema" in tool for tool in doc["tools"])
        # check, explain, lint and export read it, the file name giving the server.
        tools = read_catalog(str(directory / "catalogs" / f"{server}.json"))
        assert {t.server_id for t in tools} == {server}
    read_file = next(t for t in read_catalog(str(directory / "catalogs" / "alpha.json"))
                     if t.name == "read_file")
    assert read_file.annotations == {"readOnlyHint": True}
    # Fetching ends the servers it started.
    assert [pid for pid in upstream_pids(directory).values() if alive(pid)] == []


def test_fetch_one_command_and_a_failing_server_does_not_stop_the_others(tmp_path):
    one = toolfilter("fetch", "-o", str(tmp_path / "one"), "--", sys.executable, SCRIPT, "beta")
    assert one.returncode == 0, one.stderr
    assert "gateway_upstream: 3 tools" in one.stderr  # named after the script, as a server id can be
    servers = {"broken": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]},
               "beta": {"command": sys.executable, "args": [SCRIPT, "beta"]}}
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    both = toolfilter("fetch", "--servers", str(tmp_path / "servers.json"), "-o",
                      str(tmp_path / "both"), "--timeout", "20")
    assert both.returncode == 1
    lines = [line for line in both.stderr.splitlines() if line.startswith(("broken:", "beta:"))]
    assert lines[0].startswith("broken: error: ")
    assert lines[1].startswith("beta: 3 tools -> ")
    assert (tmp_path / "both" / "beta.json").exists()
    assert not (tmp_path / "both" / "broken.json").exists()
    assert "fetched 1 of 2 servers" in both.stderr


# --- export ----------------------------------------------------------------------------


def catalogs(directory):
    return [str(directory / "catalogs" / f"{server}.json") for server in ("alpha", "beta")]


def expected(paths, directory, ctx):
    policy = Policy.from_file(paths["policy"])
    tools = [t for path in catalogs(directory) for t in read_catalog(path)]
    return {(t.server_id, t.name) for t in policy.select(tools, ctx).tools}


def export(fetched, fmt, *extra):
    directory, paths, _ = fetched
    result = toolfilter("export", "--config", str(paths["policy"]), "--format", fmt, *extra,
                        *catalogs(directory))
    assert result.returncode == 0, result.stderr
    return result.stdout


ADMIN_CTX = json.dumps({"scopes": TOKENS["token-alice"]["scopes"]})
USER_CTX = json.dumps({"scopes": TOKENS["token-bob"]["scopes"]})


@pytest.mark.parametrize("ctx", [ADMIN_CTX, USER_CTX])
def test_export_openai_responses_mcp_tools(fetched, ctx):
    directory, paths, _ = fetched
    doc = json.loads(export(fetched, "openai", "--ctx", ctx,
                            "--server-url", "alpha=https://alpha.example/mcp"))
    # The Responses API's mcp tool: type "mcp", server_label, server_url (or a
    # connector_id), allowed_tools as a list of tool names; nothing else here.
    for tool in doc["tools"]:
        assert set(tool) == {"type", "server_label", "server_url", "allowed_tools"}
        assert tool["type"] == "mcp" and isinstance(tool["server_label"], str)
        assert tool["server_url"].startswith("https://")
        assert all(isinstance(name, str) for name in tool["allowed_tools"])
    assert doc["tools"][0]["server_url"] == "https://alpha.example/mcp"
    got = {(t["server_label"], n) for t in doc["tools"] for n in t["allowed_tools"]}
    assert got == expected(paths, directory, json.loads(ctx))
    assert any("depends on the caller" in line and ctx.replace(" ", "") in line.replace(" ", "")
               for line in doc["//"])
    assert any("has no URL here" in line for line in doc["//"])  # beta's is a placeholder


def test_export_anthropic_mcp_connector_toolsets(fetched):
    directory, paths, _ = fetched
    doc = json.loads(export(fetched, "anthropic", "--ctx", USER_CTX))
    # mcp_servers entries are {"type": "url", "url", "name"}; each is referenced by
    # exactly one mcp_toolset; an allowlist disables by default and enables by name.
    servers = {s["name"]: s for s in doc["mcp_servers"]}
    for server in doc["mcp_servers"]:
        assert set(server) == {"type", "url", "name"} and server["type"] == "url"
    toolsets = doc["tools"]
    assert sorted(t["mcp_server_name"] for t in toolsets) == sorted(servers)
    got = set()
    for toolset in toolsets:
        assert set(toolset) == {"type", "mcp_server_name", "default_config", "configs"}
        assert toolset["type"] == "mcp_toolset"
        assert toolset["default_config"] == {"enabled": False}
        assert all(config == {"enabled": True} for config in toolset["configs"].values())
        got |= {(toolset["mcp_server_name"], name) for name in toolset["configs"]}
    assert got == expected(paths, directory, json.loads(USER_CTX))


def test_export_claude_code_permission_rules(fetched):
    directory, paths, _ = fetched
    doc = json.loads(export(fetched, "claude-code", "--ctx", USER_CTX))
    rules = doc["permissions"]
    assert set(rules) == {"allow", "deny"}

    def parse(rule):
        assert rule.startswith("mcp__")
        return split_flat_name(rule[len("mcp__"):])

    allowed = {parse(rule) for rule in rules["allow"]}
    denied = {parse(rule) for rule in rules["deny"]}
    assert allowed == expected(paths, directory, json.loads(USER_CTX))
    everything = {(s, n) for s, names in TOOLS.items() for n in names}
    assert allowed | denied == everything and not allowed & denied


def test_export_docker_gateway_command(fetched):
    directory, paths, _ = fetched
    text = export(fetched, "docker", "--ctx", ADMIN_CTX)
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert header and "depends on the caller" in " ".join(header)
    words = shlex.split(text.replace("\\\n", " "), comments=True)  # as bash joins the lines
    assert words[:4] == ["docker", "mcp", "gateway", "run"]
    flags = list(zip(words[4::2], words[5::2], strict=True))
    assert flags[0] == ("--servers", "alpha,beta")
    got = {tuple(value.split(":", 1)) for flag, value in flags[1:] if flag == "--tools"}
    assert got == expected(paths, directory, json.loads(ADMIN_CTX))
    assert all(flag == "--tools" for flag, _ in flags[1:])


def test_export_of_a_ctx_dependent_policy_needs_a_ctx(fetched):
    directory, paths, _ = fetched
    result = toolfilter("export", "--config", str(paths["policy"]), "--format", "openai",
                        *catalogs(directory))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"toolfilter export: error: {paths['policy']}: the policy's verdict depends on the "
        "caller's ctx (a function pattern or a CEL pattern reading ctx): give --ctx JSON to "
        "export the list of one caller"]


def test_export_of_a_static_policy_says_nothing_of_a_caller(fetched, tmp_path):
    directory, _, _ = fetched
    (tmp_path / "static.toml").write_text('[filter]\nexclude = ["*/admin_*", "*/delete_*"]\n')
    result = toolfilter("export", "--config", str(tmp_path / "static.toml"), "--format",
                        "claude-code", *catalogs(directory))
    doc = json.loads(result.stdout)
    assert not any("caller" in line for line in doc["//"])
    assert doc["permissions"]["allow"] == [
        "mcp__alpha__write_file", "mcp__alpha__read_file", "mcp__beta__search_docs",
        "mcp__beta__fetch_page"]


# --- bad input: one line, exit 2 ------------------------------------------------------


def one_line_error(result, *expected):
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for part in expected:
        assert part in lines[0]
    return lines[0]


def serve(paths, *extra):
    return toolfilter("serve", "--config", str(paths["policy"]), "--servers",
                      str(paths["servers"]), *extra)


def test_serve_refuses_a_malformed_servers_file(tmp_path):
    paths = write_setup(tmp_path)
    paths["servers"].write_text('{"mcpServers": {"alpha": {"command": 3}')
    one_line_error(serve(paths), "toolfilter serve: error: ", "servers.json: invalid JSON")
    paths["servers"].write_text('{"servers": {}}')
    one_line_error(serve(paths), "expected an object with an 'mcpServers' object")
    paths["servers"].write_text('{"mcpServers": {"a__b": {"command": "python3"}}}')
    one_line_error(serve(paths), "server 'a__b': a server name may not hold '__'")


def test_serve_refuses_a_policy_naming_an_unknown_server(tmp_path):
    paths = write_setup(tmp_path)
    paths["policy"].write_text('[filter]\ninclude = ["alpha/*", "gitlab/read_*"]\n')
    line = one_line_error(serve(paths), 'filter.include[1] "gitlab/read_*" names a server '
                                        "that is not in the servers file")
    assert "alpha, beta" in line
    assert upstream_pids(tmp_path) == {}  # nothing was started


def test_serve_refuses_a_port_in_use(tmp_path):
    paths = write_setup(tmp_path)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        one_line_error(serve(paths, "--transport", "http", "--port", str(port)),
                       f"--port {port}: cannot listen", "in use")
    finally:
        taken.close()
    assert upstream_pids(tmp_path) == {}


def test_serve_refuses_a_command_that_does_not_exist(tmp_path):
    paths = write_setup(tmp_path)
    paths["servers"].write_text(json.dumps({"mcpServers": {
        "alpha": {"command": "toolfilter-no-such-command-anywhere"}}}))
    one_line_error(serve(paths), "server 'alpha': command 'toolfilter-no-such-command-anywhere' "
                                 "not found on PATH")


def test_serve_refuses_flags_of_the_other_transport(tmp_path):
    paths = write_setup(tmp_path)
    one_line_error(serve(paths, "--transport", "http", "--ctx", "{}"),
                   "--ctx is for --transport stdio")
    one_line_error(serve(paths, "--token-file", str(paths["tokens"])),
                   "are for --transport http")
    one_line_error(serve(paths, "--message-from", "cookie:x"), "--message-from 'cookie:x'")


# --- the pieces ---------------------------------------------------------------------


def test_servers_file_entries(tmp_path):
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": {
        "local": {"command": sys.executable, "args": ["-V"], "env": {"A": "1"}},
        "remote": {"url": "https://example.invalid/mcp", "headers": {"X": "y"}},
        "off": {"command": "no-such-command", "disabled": True},
        "cursor_extra": {"url": "http://127.0.0.1:1/sse", "type": "sse", "autoApprove": []},
    }}))
    specs = read_servers(str(path))
    assert [(s.name, s.kind) for s in specs] == [
        ("local", "stdio"), ("remote", "remote"), ("cursor_extra", "remote")]
    assert specs[0].args == ("-V",) and specs[0].env == {"A": "1"}
    assert specs[1].headers == {"X": "y"} and specs[2].transport == "sse"
    for bad, message in [
        ({"a": {"url": "ftp://x"}}, "'url' must be an http:// or https:// URL"),
        ({"a": {"command": "x", "url": "http://x"}}, "not both"),
        ({"a": {"args": []}}, "needs 'command'"),
        ({"a_": {"url": "http://x"}}, "end in '_'"),
        ({"a": {"command": sys.executable, "args": "x"}}, "'args' must be an array"),
    ]:
        path.write_text(json.dumps({"mcpServers": bad}))
        with pytest.raises(ServersError, match=message):
            read_servers(str(path))


def test_flat_names_split_at_the_first_separator():
    assert split_flat_name("github__create_issue") == ("github", "create_issue")
    assert split_flat_name("fs___hidden__x") == ("fs", "_hidden__x")
    assert split_flat_name("no_separator") is None
    assert split_flat_name("__x") is None


def test_an_upstream_listing_a_name_twice_shows_neither(caplog):
    from types import SimpleNamespace

    from toolfilter_fast.gateway.servers import ServerSpec

    upstream = Upstream(ServerSpec("dup", "remote", url="http://127.0.0.1:9/mcp"))
    tools = [SimpleNamespace(name=name) for name in ("a", "b", "a", "c")]
    with caplog.at_level("WARNING", logger="toolfilter_fast.gateway"):
        kept = upstream._unique("tools", tools)
        prompts = upstream._unique("prompts", tools)
    assert [t.name for t in kept] == [t.name for t in prompts] == ["b", "c"]
    assert "upstream 'dup' lists 2 tools named 'a': neither is shown" in caplog.text
    assert "upstream 'dup' lists 2 prompts named 'a': neither is shown" in caplog.text


def test_fetch_a_server_whose_command_does_not_exist_fails_alone(tmp_path):
    servers = {"gone": {"command": "toolfilter-no-such-command-anywhere"},
               "beta": {"command": sys.executable, "args": [SCRIPT, "beta"]}}
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    result = toolfilter("fetch", "--servers", str(tmp_path / "servers.json"), "-o",
                        str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr
    assert "gone: error: command 'toolfilter-no-such-command-anywhere' not found on PATH" \
        in result.stderr
    assert (tmp_path / "out" / "beta.json").exists()
    assert "fetched 1 of 2 servers" in result.stderr


def test_fetch_errors_name_the_command():
    result = toolfilter("fetch", "-o", "unused")
    one_line_error(result, "toolfilter fetch: error: give one of --servers FILE")
