"""The OpenAI Agents SDK adapter, against the installed ``openai-agents``.

Unit tests build the SDK's own ``ToolFilterContext``/``RunContextWrapper``/``Agent``
and ``mcp.types.Tool``; the round trip spawns the demo FastMCP server over stdio
and lists tools through ``MCPServerStdio`` and ``Agent.get_all_tools`` (the path a
run takes). No model is called.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import dataclass

import pytest

import toolfilter_fast

agents = pytest.importorskip("agents", reason="needs the openai-agents extra")
mcp_types = pytest.importorskip("mcp.types", reason="needs the openai-agents extra")

from _mcp_demo_server import SCRIPT, TOOL_NAMES  # noqa: E402
from agents import Agent, RunContextWrapper  # noqa: E402
from agents.mcp import MCPServerStdio, ToolFilterContext  # noqa: E402

from toolfilter_fast.adapters.openai_agents import MCPToolFilter, mcp_tool_filter  # noqa: E402


@dataclass
class User:
    name: str
    admin: bool = False


def is_admin(tool, user):
    return user is not None and user.admin


def filter_context(user=None, server_name="github"):
    return ToolFilterContext(
        run_context=RunContextWrapper(context=user), agent=Agent(name="a"),
        server_name=server_name,
    )


def mcp_tool(name, **fields):
    return mcp_types.Tool(name=name, input_schema={"type": "object"}, **fields)


def test_patterns_see_server_name_and_tool_name(impl):
    adapter = mcp_tool_filter(impl.compile(include=["github/*"], exclude=["*/delete_*"]))
    assert adapter(filter_context(), mcp_tool("read_file")) is True
    assert adapter(filter_context(), mcp_tool("Delete-Repo")) is False   # exclude is loose
    assert adapter(filter_context(server_name="gitlab"), mcp_tool("read_file")) is False


def test_fixed_server_id_overrides_server_name(impl):
    adapter = mcp_tool_filter(impl.compile(include=["gh/*"]), server_id="gh")
    assert adapter(filter_context(server_name="GitHub (stdio)"), mcp_tool("x")) is True
    assert mcp_tool_filter(impl.compile(include=["gh/*"]))(
        filter_context(server_name="GitHub (stdio)"), mcp_tool("x"),
    ) is False


def test_default_ctx_is_the_run_context_object(impl):
    adapter = mcp_tool_filter(impl.compile(include=["*/read_*", is_admin]))
    assert adapter(filter_context(User("bob")), mcp_tool("admin_reset")) is False
    assert adapter(filter_context(User("root", admin=True)), mcp_tool("admin_reset")) is True
    assert adapter(filter_context(User("bob")), mcp_tool("read_file")) is True


def test_ctx_function_receives_the_tool_filter_context(impl):
    seen = []

    def ctx(context):
        seen.append(context)
        return User(context.agent.name, admin=context.agent.name == "ops")

    adapter = mcp_tool_filter(impl.compile(include=[is_admin]), ctx=ctx)
    context = ToolFilterContext(
        run_context=RunContextWrapper(context=None), agent=Agent(name="ops"), server_name="s",
    )
    assert adapter(context, mcp_tool("admin_reset")) is True
    assert seen == [context]
    assert adapter(filter_context(), mcp_tool("admin_reset")) is False


def test_function_patterns_read_schema_and_camel_case_annotations(impl):
    seen = {}

    def destructive(tool, ctx):
        seen["tool"] = tool
        return (tool.annotations or {}).get("destructiveHint") is True

    adapter = mcp_tool_filter(impl.compile(exclude=[destructive]))
    tool = mcp_types.Tool(
        name="delete_repo", description="Deletes.", input_schema={"type": "object"},
        annotations=mcp_types.ToolAnnotations(destructive_hint=True),
    )
    assert adapter(filter_context(), tool) is False
    assert seen["tool"] == toolfilter_fast.Tool(
        "github", "delete_repo", "Deletes.", {"type": "object"}, {"destructiveHint": True},
    )
    assert adapter(filter_context(), mcp_tool("read_file")) is True


def test_a_mapping_tool_works_too(impl):
    adapter = mcp_tool_filter(impl.compile(exclude=["*/delete_repo"]))
    assert adapter(filter_context(), {"name": "read_file"}) is True
    assert adapter(filter_context(), {"name": "delete_repo"}) is False


def test_fails_closed_and_logs(impl, caplog):
    def broken_ctx(context):
        raise KeyError("no user")

    adapter = mcp_tool_filter(impl.compile(), ctx=broken_ctx)
    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        assert adapter(filter_context(), mcp_tool("read_file")) is False
    assert "'read_file'" in caplog.text and "KeyError" in caplog.text
    # A server name that is no str, a tool without a name: hidden, not raised.
    assert mcp_tool_filter(impl.compile())(filter_context(server_name=None), mcp_tool("x")) is False
    assert mcp_tool_filter(impl.compile())(filter_context(), object()) is False


def test_a_filter_that_raises_hides_the_tool():
    class Exploding:
        def visible(self, tool, ctx):
            raise RuntimeError("boom")

        filter = static_visible = visible

    assert mcp_tool_filter(Exploding())(filter_context(), mcp_tool("x")) is False


def test_a_filter_answering_non_bool_hides_the_tool():
    class Truthy:
        def visible(self, tool, ctx):
            return "yes"

        filter = static_visible = visible

    assert mcp_tool_filter(Truthy())(filter_context(), mcp_tool("x")) is False


def test_base_exceptions_propagate():
    def interrupted(context):
        raise KeyboardInterrupt

    adapter = mcp_tool_filter(toolfilter_fast.compile(), ctx=interrupted)
    with pytest.raises(KeyboardInterrupt):
        adapter(filter_context(), mcp_tool("x"))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tool_filter": ["*/x"]}, "tool_filter must be a ToolFilter"),
        ({"tool_filter": None}, "tool_filter must be a ToolFilter"),
        ({"server_id": 3}, "server_id must be str or None, not int"),
        ({"ctx": "deps"}, "ctx must be a function"),
    ],
)
def test_bad_arguments_are_type_errors(kwargs, message):
    arguments = {"tool_filter": toolfilter_fast.compile(), **kwargs}
    with pytest.raises(TypeError, match=message):
        mcp_tool_filter(arguments.pop("tool_filter"), **arguments)


def test_repr_names_the_filter():
    adapter = mcp_tool_filter(toolfilter_fast.compile(exclude=["*/x"]), server_id="s")
    assert isinstance(adapter, MCPToolFilter)
    assert repr(adapter) == "MCPToolFilter(ToolFilter.compile(include=[], exclude=['*/x']), server_id='s')"


def test_real_stdio_server_lists_per_user_tools(caplog):
    rules = toolfilter_fast.compile(
        exclude=["*/delete_repo"], include=["demo/read_*", "demo/write_*", is_admin],
    )

    async def main():
        server = MCPServerStdio(
            params={"command": sys.executable, "args": [SCRIPT, "demo"]},
            name="demo", tool_filter=mcp_tool_filter(rules), client_session_timeout_seconds=60,
        )
        async with server:
            agent = Agent(name="assistant", mcp_servers=[server])
            listed = {}
            for user in (User("bob"), User("root", admin=True), None):
                run_context = RunContextWrapper(context=user)
                tools = await server.list_tools(run_context, agent)
                agent_tools = await agent.get_all_tools(run_context)
                listed[user.name if user else None] = (
                    [tool.name for tool in tools], sorted(tool.name for tool in agent_tools),
                )
            adapter, server.tool_filter = server.tool_filter, None
            everything = await server.list_tools(RunContextWrapper(context=None), agent)
            server.tool_filter = adapter
            return listed, [tool.name for tool in everything]

    with caplog.at_level(logging.WARNING):
        listed, everything = asyncio.run(main())
    assert everything == list(TOOL_NAMES)  # the server offers them all: the filter hides
    assert listed["bob"] == (["read_file", "write_file"], ["read_file", "write_file"])
    assert listed["root"] == (
        ["read_file", "write_file", "admin_reset"], ["admin_reset", "read_file", "write_file"],
    )
    assert listed[None] == (["read_file", "write_file"], ["read_file", "write_file"])
    # The SDK logs when a filter raises; the adapter never did.
    assert "Error applying MCP tool filter" not in caplog.text
