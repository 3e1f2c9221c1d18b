"""The MCP SDK server adapter, against the installed ``mcp`` (2.x in the main
venv, 1.x in the mcp1 venv: CI runs this file in both).

The servers are the SDK's own: the high-level one (``MCPServer``, 1.x's
``FastMCP``) and the low-level ``Server`` of ``_mcp_sdk_server.py``, filtered by
``filter_server``, reached in-process by the SDK's client and, once, as a real
stdio subprocess. The caller's role comes in the request's ``_meta``. No model
is called.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys

import anyio
import pytest

import toolfilter_fast

pytest.importorskip("mcp", reason="needs the MCP SDK (the mcp extra)")

from _mcp_demo_server import POLICY_CONFIG
from _mcp_sdk_server import (
    EXTRA_PROMPTS,
    EXTRA_RESOURCES,
    MODERN,
    SCRIPT,
    TOOL_NAMES,
    UNKNOWN_ANSWERS,
    broken_ctx,
    build_lowlevel_server,
    build_server,
    demo_policy,
    no_destructive_tools,
)
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared import exceptions
from mcp.types import PaginatedRequestParams

from toolfilter_fast.adapters.mcp_server import (
    MESSAGE_KEY,
    MCPRequest,
    ToolFilterMiddleware,
    filter_server,
)

#: The SDK's JSON-RPC error: MCPError in 2.x, McpError in 1.x.
SDK_ERROR = getattr(exceptions, "MCPError", None) or exceptions.McpError

BUILDERS = {"high-level": build_server, "low-level": build_lowlevel_server}
ARGS = {"path": "p", "repo": "r"}


def served(kind, factory=no_destructive_tools, **extra):
    server = BUILDERS[kind]("demo")
    arguments = {**factory(), **extra}
    return filter_server(server, server_id="demo", **arguments)


class Caller:
    """One client of either generation: lists and calls with a ``_meta``."""

    def __init__(self, client):
        self.client = client

    async def list_tools(self, meta):
        if MODERN and not isinstance(self.client, ClientSession):
            return await self.client.list_tools(meta=meta)
        return await self.client.list_tools(params=PaginatedRequestParams(_meta=meta))

    async def answer(self, name, meta):
        """What a call gives: the result, or the JSON-RPC error, as plain data."""
        try:
            result = await self.client.call_tool(name, dict(ARGS), meta=meta)
        except SDK_ERROR as err:
            return {"error": err.error.code, "message": err.error.message}
        return result.model_dump(by_alias=True, exclude_none=True)


@contextlib.asynccontextmanager
async def connected(server):
    """A caller of ``server``: in process, or over stdio for StdioServerParameters
    (the SDK's ``ClientSession``, which gets the server's JSON-RPC errors as the
    server's dispatcher wrote them)."""
    if isinstance(server, StdioServerParameters):
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield Caller(session)
    elif MODERN:
        from mcp.client.client import Client

        async with Client(server) as client:
            yield Caller(client)
    else:
        from mcp.shared.memory import create_connected_server_and_client_session

        async with create_connected_server_and_client_session(server) as session:
            yield Caller(session)


def renamed(data, old, new):
    return json.loads(json.dumps(data).replace(old, new))


def listed_and_answers(server, meta, names):
    async def run():
        async with connected(server) as caller:
            listed = await caller.list_tools(meta)
            return listed, {name: await caller.answer(name, meta) for name in names}

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
    assert "error" not in answers["read_file"] and not answers["read_file"].get("isError")


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
    assert request.context is not None


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
    assert quiet_answer.get("isError") and "Unknown tool" in str(quiet_answer)
    assert not asked_answer.get("isError")


def test_a_policy_budget_hides_the_tools_it_cut():
    listed, answers = listed_and_answers(served("low-level", demo_policy), {"role": "user"},
                                         ["demo.submit.click", "nothing"])
    assert [tool.name for tool in listed.tools] == [
        "read_file", "write_file", "demo.search.type_text", "demo.search.clear"]
    assert answers["demo.submit.click"] == renamed(answers["nothing"], "nothing",
                                                   "demo.submit.click")


@pytest.mark.skipif(not MODERN, reason="cacheScope is a 2026-07-28 field: mcp 1.x has none")
def test_a_list_that_read_the_caller_is_private():
    listed, _ = listed_and_answers(served("high-level"), {"role": "user"}, [])
    assert listed.cache_scope == "private"


def stdio_server(*args):
    """A filtered ``_mcp_sdk_server.py`` as a stdio subprocess, ``args`` before
    ``filtered``; with the whole environment (the SDK passes a child only a few
    variables by default, and PYTHONPATH says which toolfilter_fast runs)."""
    return StdioServerParameters(
        command=sys.executable,
        args=[SCRIPT, "demo", *args, "filtered", "_mcp_sdk_server:no_destructive_tools"],
        env=dict(os.environ))


def test_a_real_stdio_server_filters_itself():
    params = stdio_server()
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


@pytest.mark.skipif(not MODERN, reason="mcp 1.x servers have no middleware chain")
def test_filter_server_appends_to_the_chain_and_returns_the_server():
    server = build_server()
    before = list(server.middleware)
    assert filter_server(server, toolfilter_fast.compile(), server_id="demo") is server
    assert server.middleware[:-1] == before
    assert isinstance(server.middleware[-1], ToolFilterMiddleware)


@pytest.mark.skipif(MODERN, reason="mcp 2.x servers take a middleware instead")
def test_a_1x_server_gets_its_tool_handlers_wrapped():
    from mcp import types
    from mcp.server.lowlevel import Server

    server = build_lowlevel_server()
    before = dict(server.request_handlers)
    assert filter_server(server, toolfilter_fast.compile(), server_id="demo") is server
    for request in (types.ListToolsRequest, types.CallToolRequest):
        assert server.request_handlers[request] is not before[request]
    with pytest.raises(TypeError, match="before filter_server"):
        filter_server(Server("bare"), toolfilter_fast.compile(), server_id="demo")


# --- a call is judged against the whole listing of its turn -------------------------------


@pytest.mark.parametrize("kind", BUILDERS)
@pytest.mark.parametrize("config", [{"relevance": {"top_k": 2}}, {"budget": {"max_tools": 2}}],
                         ids=["relevance", "budget"])
def test_a_call_is_let_through_only_when_the_listing_of_its_turn_shows_the_tool(kind, config):
    # Relevance and the budget keep a tool by the others of its list: a call of a tool
    # that the listing cut is answered as a tool that never existed.
    policy = toolfilter_fast.Policy.from_config(config)
    meta = {MESSAGE_KEY: "read a file from the repository"}
    listed, answers = listed_and_answers(served(kind, lambda: {"tool_filter": policy}), meta,
                                         [*TOOL_NAMES, "never_was"])
    shown = [tool.name for tool in listed.tools]
    everything = [toolfilter_fast.Tool.from_mcp("demo", tool)
                  for tool in anyio.run(build_server("demo").list_tools)]
    assert shown == [tool.name for tool in policy.select(everything, None, meta[MESSAGE_KEY]).tools]
    assert len(shown) == 2
    for name in TOOL_NAMES:
        if name in shown:
            assert name in str(answers[name]) and "error" not in answers[name]
            assert not answers[name].get("isError")
        else:
            assert answers[name] == renamed(answers["never_was"], "never_was", name), name


# --- a hidden call is answered as an unknown one, whatever the server's handler does ------


@pytest.mark.parametrize("args", [[], *(["lowlevel", f"unknown={answer}"]
                                         for answer in UNKNOWN_ANSWERS)],
                         ids=["high-level", *UNKNOWN_ANSWERS])
def test_a_hidden_call_over_stdio_gets_the_answer_of_a_name_that_never_existed(args):
    # Over a real stdio process, so an exception's text reaches the client as the SDK's
    # dispatcher writes it (in process, the SDK's client hides it).
    listed, answers = listed_and_answers(stdio_server(*args), {"role": "user"},
                                         ["delete_repo", "admin_reset", "never_existed_tool"])
    assert "delete_repo" not in [tool.name for tool in listed.tools]
    never = answers["never_existed_tool"]
    assert "never_existed_tool" in str(never)
    for hidden in ("delete_repo", "admin_reset"):
        assert answers[hidden] == renamed(never, "never_existed_tool", hidden), hidden
        assert "hidden" not in str(answers[hidden]) and "toolfilter" not in str(answers[hidden])


@pytest.mark.parametrize("kind", BUILDERS)
def test_calls_of_hidden_and_unknown_names_log_no_false_alarm(kind, caplog):
    # The SDK 1.x refreshes its tool cache by calling the tools/list handler with no
    # request (for a name it has not cached): that is no failure of the rules.
    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        listed, answers = listed_and_answers(served(kind), {"role": "user"},
                                             ["delete_repo", "no_such_tool", "read_file"])
    assert "read_file" in [tool.name for tool in listed.tools]
    assert answers["delete_repo"] == renamed(answers["no_such_tool"], "no_such_tool",
                                             "delete_repo")
    assert [record.getMessage() for record in caplog.records
            if record.name.startswith("toolfilter_fast")] == []
    # A real failure still warns, with its traceback.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        listed_and_answers(served(kind, broken_ctx), {}, ["read_file"])
    assert "hidden because an error was raised" in caplog.text and "LookupError" in caplog.text


# --- prompts and resources ------------------------------------------------------------------


def extras_seen(*args):
    """What a client of ``_mcp_sdk_server.py demo extras ARGS`` filtered by
    ``extras_policy`` lists, gets and reads (over stdio: the errors as the SDK's
    dispatcher writes them)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[SCRIPT, "demo", "extras", *args, "filtered", "_mcp_sdk_server:extras_policy"],
        env=dict(os.environ))

    async def answer(make, name):
        try:
            await make(name)
        except SDK_ERROR as err:
            return {"error": err.error.code, "message": err.error.message, "data": err.error.data}
        return "shown"

    async def run():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            templates = await session.list_resource_templates()
            seen = {
                "prompts": [prompt.name for prompt in (await session.list_prompts()).prompts],
                "resources": [str(resource.uri)
                              for resource in (await session.list_resources()).resources],
                "templates": [dump["uriTemplate"] for dump in (
                    template.model_dump(by_alias=True) for template in getattr(
                        templates, "resource_templates", None) or templates.resourceTemplates)],
            }
            for name in (*EXTRA_PROMPTS, "never_was"):
                seen[f"get {name}"] = await answer(session.get_prompt, name)
            for uri in (*(uri for uri, _ in EXTRA_RESOURCES), "notes://1", "notes://private1",
                        "secret://other", "nothing://here"):
                seen[f"read {uri}"] = await answer(session.read_resource, uri)
            return seen

    return anyio.run(run)


@pytest.mark.parametrize("args", [[], ["lowlevel"]], ids=["high-level", "low-level"])
def test_prompts_and_resources_are_hidden_by_the_policy_on_every_path(args):
    seen = extras_seen(*args)
    assert seen["prompts"] == ["summary"]
    assert seen["resources"] == ["docs://readme"]
    assert seen["templates"] == ["notes://{key}"]
    assert seen["get summary"] == seen["read docs://readme"] == seen["read notes://1"] == "shown"
    never = seen["get never_was"]
    assert "never_was" in str(never)
    for name in ("fetch", "debug_dump"):        # named like the hidden tool; excluded
        assert seen[f"get {name}"] == renamed(never, "never_was", name), name
    nothing = seen["read nothing://here"]
    assert "nothing://here" in str(nothing)
    for uri in ("secret://key", "data://fetch", "notes://private1", "secret://other"):
        assert seen[f"read {uri}"] == renamed(nothing, "nothing://here", uri), uri
        assert "toolfilter" not in str(seen[f"read {uri}"])
