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
from types import SimpleNamespace

import pytest

import toolfilter_fast

agents = pytest.importorskip("agents", reason="needs the openai-agents extra")
mcp_types = pytest.importorskip("mcp.types", reason="needs the openai-agents extra")

from _mcp_demo_server import POLICY_CONFIG, SCRIPT, TOOL_NAMES  # noqa: E402
from agents import Agent, RunConfig, RunContextWrapper, Runner  # noqa: E402
from agents.exceptions import ModelBehaviorError  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.mcp import MCPServerStdio, ToolFilterContext  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from toolfilter_fast.adapters.openai_agents import (  # noqa: E402
    MCPListFilter,
    MCPToolFilter,
    filtered_server,
    mcp_tool_filter,
    turn_input_text,
)


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


# --- a Policy ------------------------------------------------------------------------

class ScriptedModel(Model):
    """A model with no API behind it: records the tools and input of each call,
    asks for ``call`` (a name and arguments) once, then answers "done"."""

    def __init__(self, call=None):
        self.call, self.offered, self.inputs = call, [], []

    async def get_response(self, system_instructions, input, model_settings, tools,
                           output_schema, handoffs, tracing, **kwargs):
        self.offered.append([tool.name for tool in tools])
        self.inputs.append(input)
        if self.call is not None and len(self.offered) == 1:
            name, arguments = self.call
            output = [ResponseFunctionToolCall(type="function_call", call_id="c1", id="f1",
                                               name=name, arguments=arguments)]
        else:
            output = [ResponseOutputMessage(
                id="m1", type="message", role="assistant", status="completed",
                content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
            )]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


def policy_server(impl, **kwargs):
    server = MCPServerStdio(
        params={"command": sys.executable, "args": [SCRIPT, "demo", "policy"]},
        name="demo", client_session_timeout_seconds=60,
    )
    return filtered_server(server, impl.Policy.from_config(POLICY_CONFIG), **kwargs)


async def run_turn(server, message, context, call=None):
    """A run: the tools offered on each model call, the inputs, the error if any."""
    model = ScriptedModel(call)
    agent = Agent(name="assistant", model=model, mcp_servers=[server])
    try:
        await Runner.run(agent, message, context=context,
                         run_config=RunConfig(tracing_disabled=True))
    except ModelBehaviorError as err:
        return model.offered, model.inputs, str(err)
    return model.offered, model.inputs, None


def test_a_policy_with_all_four_stages_over_a_stdio_server(impl):
    admin = {"role": "admin", "focus": "demo:search"}

    async def main():
        async with policy_server(impl) as server:
            return [
                await run_turn(server, "please reset the cache", admin),
                await run_turn(server, "please reset the cache", admin,
                               call=("read_file", '{"path": "p"}')),
                await run_turn(server, "please reset the cache", admin,
                               call=("demo.search.clear", "{}")),
                await run_turn(server, "please reset the cache", admin,
                               call=("never_existed", "{}")),
                await run_turn(server, "hello", {"role": "admin", "focus": "demo:submit"}),
                await run_turn(server, [{"role": "user", "content": "reset"},
                                        {"role": "assistant", "content": "done"},
                                        {"role": "user", "content": "hello"}], {"role": "admin"}),
                await run_turn(server, "please reset the cache", {"role": "user"}),
            ]

    turns = asyncio.run(main())
    first = ["read_file", "write_file", "admin_reset", "demo.search.type_text"]
    assert turns[0][0] == [first] and turns[0][2] is None
    offered, inputs, error = turns[1]
    assert offered == [first, first] and error is None
    assert [item["output"] for item in inputs[1] if item.get("type") == "function_call_output"] \
        == [[{"type": "input_text", "text": "read_file p"}]]
    # A tool the budget cut fails as a tool that never existed.
    hidden, missing = turns[2][2], turns[3][2]
    assert hidden == "Tool demo.search.clear not found in agent assistant"
    assert hidden.replace("demo.search.clear", "NAME") == missing.replace("never_existed", "NAME")
    assert turns[4][0] == [["read_file", "write_file", "demo.submit.click"]]
    # The newest user item is the message: "reset" two items back is not.
    assert turns[5][0] == [["read_file", "write_file", "demo.search.type_text",
                            "demo.search.clear"]]
    assert turns[6][0] == [["read_file", "write_file", "demo.search.type_text",
                            "demo.search.clear"]]


def safe_tool(name):
    """An MCP tool that says it is neither read-only nor destructive."""
    return mcp_tool(name, annotations=mcp_types.ToolAnnotations(read_only_hint=False,
                                                                destructive_hint=False))


def test_filtered_server_functions_get_a_tool_filter_context(impl):
    seen = []

    def ctx(context):
        seen.append((type(context).__name__, context.server_name, context.agent.name))
        return {"role": context.run_context.context.role}

    list_filter = MCPListFilter(
        impl.Policy.from_config(POLICY_CONFIG), ctx=ctx,
        message=lambda context: "reset", focus=lambda context: context.run_context.context.focus,
    )
    tools = [safe_tool(name) for name in ("admin_reset", "demo.search.clear", "demo.submit.click")]
    kept = list_filter(tools, RunContextWrapper(context=SimpleNamespace(role="admin",
                                                                        focus="demo:submit")),
                       Agent(name="ops"), "demo")
    assert [tool.name for tool in kept] == ["admin_reset", "demo.submit.click"]
    assert all(any(k is t for t in tools) for k in kept)
    assert seen == [("ToolFilterContext", "demo", "ops")]


def test_filtered_server_takes_a_tool_filter_too_and_fails_closed(caplog):
    def broken(context):
        raise KeyError("no user")

    tools = [mcp_tool("read_file"), mcp_tool("delete_repo")]
    rules = toolfilter_fast.compile(exclude=["*/delete_*"])
    assert [tool.name for tool in MCPListFilter(rules)(tools, RunContextWrapper(None), None, "s")] \
        == ["read_file"]
    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        assert MCPListFilter(rules, ctx=broken)(tools, RunContextWrapper(None), None, "s") == []
        assert MCPListFilter(toolfilter_fast.Policy(), message=broken)(
            tools, RunContextWrapper(None), None, "s") == []
    assert caplog.text.count("every tool (2) of server 's' hidden") == 2


def test_a_filtered_server_outside_a_run_judges_no_user_no_message_no_focus():
    async def main():
        async with policy_server(toolfilter_fast) as server:
            return [tool.name for tool in await server.list_tools()]

    # ctx None: no admin tools; no message: no admin group; no focus: no lens.
    assert asyncio.run(main()) == ["read_file", "write_file", "demo.search.type_text",
                                   "demo.search.clear"]


def test_filtered_server_needs_a_server():
    with pytest.raises(TypeError, match=r"server must be an agents\.mcp\.MCPServer"):
        filtered_server(object(), toolfilter_fast.Policy())


def test_turn_input_text_reads_the_newest_user_item():
    def text(turn_input):
        return turn_input_text(filter_context_with(turn_input))

    def filter_context_with(turn_input):
        return ToolFilterContext(run_context=RunContextWrapper(context=None, turn_input=turn_input),
                                 agent=Agent(name="a"), server_name="s")

    assert text([]) is None
    assert text([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]) == "a"
    assert text([{"role": "user", "content": [
        {"type": "input_text", "text": "reset"}, {"type": "input_image", "image_url": "u"},
        {"type": "input_text", "text": "the cache"},
    ]}]) == "reset\nthe cache"
    assert turn_input_text(ToolFilterContext(run_context=None, agent=None, server_name="s")) is None


def test_mcp_tool_filter_takes_a_policy_it_can_apply_per_tool(impl):
    unbudgeted = {key: value for key, value in POLICY_CONFIG.items() if key != "budget"}
    adapter = mcp_tool_filter(impl.Policy.from_config(unbudgeted), server_id="demo")

    def context(role, message, focus=None):
        return ToolFilterContext(
            run_context=RunContextWrapper(context={"role": role, "focus": focus},
                                          turn_input=[{"role": "user", "content": message}]),
            agent=Agent(name="a"), server_name="demo",
        )

    assert adapter(context("admin", "reset"), safe_tool("admin_reset")) is True
    assert adapter(context("admin", "hello"), safe_tool("admin_reset")) is False   # groups
    assert adapter(context("user", "reset"), safe_tool("admin_reset")) is False    # CEL
    assert adapter(context("admin", "x", "demo:search"), safe_tool("demo.submit.click")) is False
    assert adapter(context("admin", "x", "demo:submit"), safe_tool("demo.submit.click")) is True
    with pytest.raises(TypeError, match=r"mcp_tool_filter \(an MCP server's tool_filter\) judges "
                                        r"one tool at a time.*\(max_tools=4\): use "
                                        r"filtered_server\(server, policy\)"):
        mcp_tool_filter(impl.Policy.from_config(POLICY_CONFIG))


# --- hints as the server sent them ------------------------------------------------------


def raw_server(**kwargs):
    """An Agents SDK server on ``_raw_hints_server.py``, whose hints are not all booleans."""
    from _raw_hints_server import SCRIPT as RAW_SCRIPT

    return MCPServerStdio(params={"command": sys.executable, "args": [RAW_SCRIPT, "raw"]},
                          name="raw", client_session_timeout_seconds=60, **kwargs)


async def listed_names(server):
    async with server:
        tools = await server.list_tools(RunContextWrapper(context=None), Agent(name="a"))
        return [tool.name for tool in tools]


def test_filtered_server_judges_hints_as_the_server_sent_them():
    from test_sdk_hints import NO_DESTRUCTIVE, kept_as_sent

    names = asyncio.run(listed_names(filtered_server(raw_server(), NO_DESTRUCTIVE)))
    assert names == kept_as_sent() == ["read_file"]


def test_a_per_tool_filter_judges_hints_as_sent_inside_a_hints_as_sent_block():
    from test_sdk_hints import NO_DESTRUCTIVE, kept_as_sent

    from toolfilter_fast.sdk_hints import hints_as_sent

    async def main():
        server = raw_server(tool_filter=mcp_tool_filter(NO_DESTRUCTIVE))
        with hints_as_sent():
            return await listed_names(server)

    assert asyncio.run(main()) == kept_as_sent()


def test_mcp_tool_filter_refuses_a_policy_whose_relevance_needs_the_list(impl):
    policy = impl.Policy.from_config({"relevance": {"top_k": 1}})
    with pytest.raises(TypeError, match=r"mcp_tool_filter \(an MCP server's tool_filter\) judges "
                                        r"one tool at a time.*\(relevance top_k=1\): use "
                                        r"filtered_server\(server, policy\)"):
        mcp_tool_filter(policy)
    assert "MCPListFilter" in repr(filtered_server(raw_server(), policy).list_tools)
