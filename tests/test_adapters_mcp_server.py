"""The MCP SDK server adapter, against the installed ``mcp`` 2.x.

The servers are the SDK's own: ``MCPServer`` and the low-level ``Server`` of
``_mcp_sdk_server.py``, filtered by ``filter_server``, reached in-process by the
SDK's ``Client`` and, once, as a real stdio subprocess. The caller's role comes
in the request's ``_meta``. No model is called.
"""

from __future__ import annotations

import json
import logging
import sys

import anyio
import pytest

import toolfilter_fast

pytest.importorskip("mcp.server.mcpserver", reason="needs the MCP SDK 2.x (the gateway extra)")

from _mcp_demo_server import POLICY_CONFIG
from _mcp_sdk_server import (
    SCRIPT,
    TOOL_NAMES,
    broken_ctx,
    build_lowlevel_server,
    build_server,
    demo_policy,
    no_destructive_tools,
)
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from toolfilter_fast.adapters.mcp_server import (
    MESSAGE_KEY,
    MCPRequest,
    ToolFilterMiddleware,
    filter_server,
)

BUILDERS = {"high-level": build_server, "low-level": build_lowlevel_server}
ARGS = {"path": "p", "repo": "r"}


def served(kind, factory=no_destructive_tools, **extra):
    server = BUILDERS[kind]("demo")
    arguments = {**factory(), **extra}
    return filter_server(server, server_id="demo", **arguments)


async def answer(client, name, meta):
    """What a call gives: the result, or the JSON-RPC error, as plain data."""
    try:
        result = await client.call_tool(name, dict(ARGS), meta=meta)
    except MCPError as err:
        return {"error": err.error.code, "message": err.error.message}
    return result.model_dump(exclude_none=True)


def renamed(data, old, new):
    return json.loads(json.dumps(data).replace(old, new))


def listed_and_answers(server, meta, names):
    async def run():
        async with Client(server) as client:
            listed = await client.list_tools(meta=meta)
            return listed, {name: await answer(client, name, meta) for name in names}

    return anyio.run(run)


@pytest.mark.parametrize("kind", BUILDERS)
def test_a_hidden_tool_is_absent_and_answered_as_an_unknown_one(kind):
    listed, answers = listed_and_answers(
        served(kind), {"role": "user"}, ["delete_repo", "admin_reset", "no_such_tool", "read_file"])
    assert [tool.name for tool in listed.tools] == [
        "read_file", "write_file", "demo.search.type_text", "demo.search.clear", "demo.submit.click"]
    unknown = answers["no_such_tool"]
    assert "no_such_tool" in str(unknown)
    for hidden in ("delete_repo", "admin_reset"):
        assert answers[hidden] == renamed(unknown, "no_such_tool", hidden)
        assert "toolfilter-fast" not in str(answers[hidden])
    assert "read_file" in str(answers["read_file"])
    assert "error" not in answers["read_file"] and not answers["read_file"].get("is_error")


@pytest.mark.parametrize("kind", BUILDERS)
def test_the_callers_ctx_changes_the_list_and_the_calls(kind):
    admin_list, admin_answers = listed_and_answers(served(kind), {"role": "admin"}, ["admin_reset"])
    user_list, user_answers = listed_and_answers(served(kind), {"role": "user"}, ["admin_reset"])
    assert "admin_reset" in [tool.name for tool in admin_list.tools]
    assert "admin_reset" not in [tool.name for tool in user_list.tools]
    assert "admin_reset" in str(admin_answers["admin_reset"])
    assert admin_answers["admin_reset"] != user_answers["admin_reset"]


@pytest.mark.parametrize("kind", BUILDERS)
def test_a_raising_ctx_hides_every_tool_and_logs(kind, caplog):
    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        listed, answers = listed_and_answers(served(kind, broken_ctx), {}, ["read_file", "nope"])
    assert listed.tools == []
    assert answers["read_file"] == renamed(answers["nope"], "nope", "read_file")
    assert "LookupError" in caplog.text and "mcp-server" in caplog.text


def test_patterns_see_the_tool_as_the_server_lists_it(impl):
    seen = []

    def record(tool, ctx):
        seen.append(tool)
        return True

    server = filter_server(build_server("Demo Title"), impl.compile(include=[record]),
                           server_id="demo")
    listed, _ = listed_and_answers(server, None, [])
    assert [tool.name for tool in listed.tools] == list(TOOL_NAMES)
    delete = next(tool for tool in seen if tool.name == "delete_repo")
    assert delete.server_id == "demo"
    assert delete.description == "Deletes a repository."
    assert delete.input_schema["properties"]["repo"]["type"] == "string"
    assert delete.annotations["destructiveHint"] is True
    assert delete.annotations["readOnlyHint"] is False


def test_the_default_ctx_is_the_request():
    seen = []

    def record(tool, request):
        seen.append(request)
        return True

    server = filter_server(build_server(), toolfilter_fast.compile(include=[record]),
                           server_id="demo")
    listed_and_answers(server, {"role": "x"}, [])
    request = seen[0]
    assert isinstance(request, MCPRequest)
    assert request.token is None and dict(request.headers) == {}
    assert request.meta["role"] == "x"
    assert request.context.method == "tools/list"


def test_a_policy_reads_its_message_from_meta(impl):
    def listed(meta):
        server = served("high-level", lambda: {
            "tool_filter": impl.Policy.from_config(POLICY_CONFIG),
            "ctx": lambda request: {"role": "admin"}})
        result, answers = listed_and_answers(server, meta, ["admin_reset"])
        return [tool.name for tool in result.tools], answers["admin_reset"]

    quiet, quiet_answer = listed({})
    asked, asked_answer = listed({MESSAGE_KEY: "please reset it"})
    assert "admin_reset" not in quiet and len(quiet) == 4
    assert "admin_reset" in asked and len(asked) == 4          # the budget still cuts
    assert quiet_answer.get("is_error") and "Unknown tool" in str(quiet_answer)
    assert not asked_answer.get("is_error")


def test_a_policy_budget_hides_the_tools_it_cut():
    listed, answers = listed_and_answers(served("low-level", demo_policy), {"role": "user"},
                                         ["demo.submit.click", "nothing"])
    assert [tool.name for tool in listed.tools] == [
        "read_file", "write_file", "demo.search.type_text", "demo.search.clear"]
    assert answers["demo.submit.click"] == renamed(answers["nothing"], "nothing",
                                                   "demo.submit.click")


def test_a_list_that_read_the_caller_is_private():
    listed, _ = listed_and_answers(served("high-level"), {"role": "user"}, [])
    assert listed.cache_scope == "private"


def test_a_real_stdio_server_filters_itself():
    params = StdioServerParameters(
        command=sys.executable,
        args=[SCRIPT, "demo", "filtered", "_mcp_sdk_server:no_destructive_tools"])
    listed, answers = listed_and_answers(params, {"role": "user"},
                                         ["delete_repo", "never_was", "write_file"])
    assert [tool.name for tool in listed.tools] == [
        "read_file", "write_file", "demo.search.type_text", "demo.search.clear", "demo.submit.click"]
    assert answers["delete_repo"] == renamed(answers["never_was"], "never_was", "delete_repo")
    assert "write_file p" in str(answers["write_file"])


@pytest.mark.parametrize(("call", "message"), [
    (lambda: filter_server(object(), toolfilter_fast.compile(), server_id="x"), "middleware list"),
    (lambda: filter_server(build_server(), object(), server_id="x"), "ToolFilter or a Policy"),
    (lambda: filter_server(build_server(), toolfilter_fast.compile(), server_id=3), "server_id"),
    (lambda: ToolFilterMiddleware(toolfilter_fast.compile(), server_id="x", ctx=1), "ctx"),
    (lambda: ToolFilterMiddleware(toolfilter_fast.compile(), server_id="x",
                                  message=lambda request: ""), "Policy"),
])
def test_bad_arguments_are_type_errors(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_filter_server_appends_to_the_chain_and_returns_the_server():
    server = build_server()
    before = list(server.middleware)
    assert filter_server(server, toolfilter_fast.compile(), server_id="demo") is server
    assert server.middleware[:-1] == before
    assert isinstance(server.middleware[-1], ToolFilterMiddleware)
