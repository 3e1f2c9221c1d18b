"""The Google ADK adapter, against the installed ``google-adk``.

Unit tests hand the predicate ADK's own ``McpTool``/``FunctionTool`` objects;
the round trip runs an ``LlmAgent`` through ADK's ``Runner`` with an
``McpToolset`` over the demo FastMCP server (stdio) and a fake ``BaseLlm`` that
records the tools each request offers. No model API is called.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from types import SimpleNamespace

import pytest

import toolfilter_fast

pytest.importorskip("google.adk", reason="needs the google-adk extra")

from _mcp_demo_server import POLICY_CONFIG, SCRIPT, TOOL_NAMES
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import FunctionTool
from google.adk.tools.base_toolset import ToolPredicate
from google.adk.tools.mcp_tool import McpTool, McpToolset, StdioConnectionParams
from google.genai import types
from mcp import StdioServerParameters
from mcp import types as mcp_types

from toolfilter_fast.adapters.google_adk import (
    ToolFilterPredicate,
    ToolListFilter,
    filtered_toolset,
    state_focus,
    tool_predicate,
    user_content_text,
)


def adk_mcp_tool(name, **fields):
    tool = mcp_types.Tool(name=name, input_schema={"type": "object"}, **fields)
    return McpTool(mcp_tool=tool, mcp_session_manager=None)


def user(user_id):
    """Stands for ADK's ReadonlyContext where only ``user_id`` is read."""
    return SimpleNamespace(user_id=user_id)


def is_root(tool, readonly_context):
    return readonly_context is not None and readonly_context.user_id == "root"


def test_is_an_adk_tool_predicate(impl):
    predicate = tool_predicate(impl.compile(), server_id="demo")
    assert isinstance(predicate, ToolPredicate)
    assert isinstance(predicate, ToolFilterPredicate)


def test_patterns_see_server_id_and_tool_name(impl):
    predicate = tool_predicate(impl.compile(include=["demo/*"], exclude=["*/delete_*"]), server_id="demo")
    assert predicate(adk_mcp_tool("read_file")) is True
    assert predicate(adk_mcp_tool("DELETE.REPO")) is False
    other = tool_predicate(impl.compile(include=["demo/*"]), server_id="other")
    assert other(adk_mcp_tool("read_file")) is False


def test_default_ctx_is_the_readonly_context(impl):
    predicate = tool_predicate(impl.compile(include=["*/read_*", is_root]), server_id="demo")
    assert predicate(adk_mcp_tool("admin_reset"), user("root")) is True
    assert predicate(adk_mcp_tool("admin_reset"), user("bob")) is False
    assert predicate(adk_mcp_tool("admin_reset")) is False          # ADK may pass None
    assert predicate(adk_mcp_tool("read_file")) is True


def test_ctx_function(impl):
    predicate = tool_predicate(
        impl.compile(include=[lambda tool, role: role == "admin"]), server_id="demo",
        ctx=lambda readonly_context: "admin" if readonly_context.user_id == "root" else "user",
    )
    assert predicate(adk_mcp_tool("x"), user("root")) is True
    assert predicate(adk_mcp_tool("x"), user("bob")) is False


def test_mcp_tools_are_read_from_their_mcp_definition(impl):
    seen = {}

    def destructive(tool, ctx):
        seen["tool"] = tool
        return (tool.annotations or {}).get("destructiveHint") is True

    predicate = tool_predicate(impl.compile(exclude=[destructive]), server_id="demo")
    tool = adk_mcp_tool(
        "delete_repo", description="Deletes.",
        annotations=mcp_types.ToolAnnotations(destructive_hint=True),
    )
    assert predicate(tool) is False
    assert seen["tool"] == toolfilter_fast.Tool(
        "demo", "delete_repo", "Deletes.", {"type": "object"}, {"destructiveHint": True},
    )


def test_other_adk_tools_are_judged_by_name(impl):
    def delete_repo(repo: str) -> str:
        """Deletes a repository."""
        return repo

    def read_file(path: str) -> str:
        """Reads a file."""
        return path

    predicate = tool_predicate(impl.compile(exclude=["local/delete_repo"]), server_id="local")
    assert predicate(FunctionTool(delete_repo)) is False
    assert predicate(FunctionTool(read_file)) is True


def test_fails_closed_and_logs(impl, caplog):
    def broken(readonly_context):
        raise AttributeError("no session")

    predicate = tool_predicate(impl.compile(), server_id="demo", ctx=broken)
    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        assert predicate(adk_mcp_tool("read_file"), user("bob")) is False
    assert "'read_file'" in caplog.text and "AttributeError" in caplog.text
    assert tool_predicate(impl.compile(), server_id="demo")(object()) is False


def test_a_filter_that_raises_hides_the_tool():
    class Exploding:
        def visible(self, tool, ctx=None):
            raise RuntimeError("boom")

        filter = static_visible = visible

    assert tool_predicate(Exploding(), server_id="demo")(adk_mcp_tool("x")) is False


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"server_id": 1}, "server_id must be str, not int"),
        ({"tool_filter": ["read_file"]}, "tool_filter must be a ToolFilter"),
        ({"ctx": 0}, "ctx must be a function"),
    ],
)
def test_bad_arguments_are_type_errors(kwargs, message):
    arguments = {"tool_filter": toolfilter_fast.compile(), "server_id": "demo", **kwargs}
    with pytest.raises(TypeError, match=message):
        tool_predicate(arguments.pop("tool_filter"), **arguments)


class RecordingLlm(BaseLlm):
    """A fake model: records the tools offered, calls ``call`` once, then answers."""

    model: str = "recording"
    call: str | None = None
    args: dict | None = None  # the call's arguments (None: {"repo": "r"})
    offered: list  # the tool names of each request
    answers: list  # the function responses the model was sent

    async def generate_content_async(self, llm_request, stream=False):
        self.offered.append(sorted(llm_request.tools_dict))
        responses = [
            part.function_response.response
            for content in llm_request.contents for part in content.parts or []
            if part.function_response is not None
        ]
        if self.call is not None and not responses:
            args = {"repo": "r"} if self.args is None else self.args
            call = types.FunctionCall(name=self.call, args=args)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
            return
        self.answers.extend(responses)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]))


def test_real_runner_offers_each_user_only_visible_tools():
    rules = toolfilter_fast.compile(exclude=["*/delete_repo"], include=["demo/read_*", is_root])

    async def main():
        toolset = McpToolset(
            connection_params=StdioConnectionParams(
                server_params=StdioServerParameters(command=sys.executable, args=[SCRIPT]),
                timeout=60,
            ),
            tool_filter=tool_predicate(rules, server_id="demo"),
        )
        sessions = InMemorySessionService()
        results = {}
        try:
            for user_id, call in [("bob", None), ("root", None), ("root", "delete_repo"),
                                  ("root", "never_existed")]:
                llm = RecordingLlm(call=call, offered=[], answers=[])
                runner = Runner(
                    app_name="app", agent=LlmAgent(name="assistant", model=llm, tools=[toolset]),
                    session_service=sessions,
                )
                session = await sessions.create_session(app_name="app", user_id=user_id)
                message = types.Content(role="user", parts=[types.Part(text="hi")])
                async for _ in runner.run_async(
                    user_id=user_id, session_id=session.id, new_message=message,
                ):
                    pass
                results[user_id, call] = (llm.offered, llm.answers)
            predicate, toolset.tool_filter = toolset.tool_filter, None
            everything = [tool.name for tool in await toolset.get_tools(None)]
            toolset.tool_filter = predicate
        finally:
            await toolset.close()
        return results, everything

    results, everything = asyncio.run(main())
    assert sorted(everything) == sorted(TOOL_NAMES)  # the server offers them all
    assert results["bob", None] == ([["read_file"]], [])
    assert results["root", None] == ([["admin_reset", "read_file", "write_file"]], [])
    hidden_offered, hidden_answers = results["root", "delete_repo"]
    _, missing_answers = results["root", "never_existed"]
    assert all(offer == ["admin_reset", "read_file", "write_file"] for offer in hidden_offered)
    # ADK tells the model the same about a hidden tool as about one that never existed.
    assert len(hidden_answers) == len(missing_answers) == 1
    assert hidden_answers[0]["error"].replace("delete_repo", "NAME") == (
        missing_answers[0]["error"].replace("never_existed", "NAME")
    )
    assert "no tool with that name is available" in hidden_answers[0]["error"]


# --- a Policy ------------------------------------------------------------------------

def role_of(readonly_context):
    return {"role": readonly_context.state.get("role") if readonly_context else None}


def policy_toolset(impl, **kwargs):
    toolset = McpToolset(connection_params=StdioConnectionParams(
        server_params=StdioServerParameters(command=sys.executable, args=[SCRIPT, "demo", "policy"]),
        timeout=60,
    ))
    return filtered_toolset(toolset, impl.Policy.from_config(POLICY_CONFIG), server_id="demo",
                            ctx=role_of, **kwargs)


async def run_turn(toolset, sessions, text, state, call=None):
    """One invocation: the tools each LLM request offered, the function responses."""
    name, args = call or (None, {})
    llm = RecordingLlm(call=name, args=args, offered=[], answers=[])
    runner = Runner(app_name="app", agent=LlmAgent(name="assistant", model=llm, tools=[toolset]),
                    session_service=sessions)
    session = await sessions.create_session(app_name="app", user_id="u", state=state)
    message = types.Content(role="user", parts=[types.Part(text=text)])
    async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        pass
    return llm.offered, llm.answers


def test_a_policy_with_all_four_stages_through_a_real_runner(impl):
    admin = {"role": "admin", "focus": "demo:search"}

    async def main():
        toolset = policy_toolset(impl)
        sessions = InMemorySessionService()
        try:
            return [
                await run_turn(toolset, sessions, "please reset the cache", admin),
                await run_turn(toolset, sessions, "please reset the cache", admin,
                               call=("read_file", {"path": "p"})),
                await run_turn(toolset, sessions, "please reset the cache", admin,
                               call=("write_file", {"path": "p"})),
                await run_turn(toolset, sessions, "please reset the cache", admin,
                               call=("never_existed", {"path": "p"})),
                await run_turn(toolset, sessions, "hello", {"role": "admin", "focus": "demo:submit"}),
                await run_turn(toolset, sessions, "please reset the cache", {"role": "user"}),
            ]
        finally:
            await toolset.close()

    turns = asyncio.run(main())
    # McpToolset lists by name, so the budget keeps the first four names:
    # write_file is cut.
    first = ["admin_reset", "demo.search.clear", "demo.search.type_text", "read_file"]
    assert turns[0] == ([first], [])
    offered, answers = turns[1]
    assert offered == [first, first]
    assert answers[0]["structuredContent"] == {"result": "read_file p"}
    (hidden,), (missing,) = turns[2][1], turns[3][1]
    assert hidden["error"].replace("write_file", "NAME") == (
        missing["error"].replace("never_existed", "NAME")
    )
    assert "no tool with that name is available" in hidden["error"]
    assert turns[4] == ([["demo.submit.click", "read_file", "write_file"]], [])
    assert turns[5] == ([["demo.search.clear", "demo.search.type_text", "demo.submit.click",
                          "read_file"]], [])


def readonly(text=None, state=None):
    """Stands for ADK's ReadonlyContext where user_content and state are read."""
    content = None if text is None else types.Content(
        role="user", parts=[types.Part(text=part) for part in text],
    )
    return SimpleNamespace(user_content=content, state=state or {})


def test_the_defaults_read_user_content_and_session_state():
    assert user_content_text(readonly(["reset", "the cache"])) == "reset\nthe cache"
    assert user_content_text(readonly()) is None
    assert user_content_text(None) is None
    assert state_focus(readonly(state={"focus": "demo:search"})) == "demo:search"
    assert state_focus(readonly()) is None
    assert state_focus(None) is None


def test_the_list_filter_with_message_and_focus_functions(impl):
    safe = mcp_types.ToolAnnotations(read_only_hint=False, destructive_hint=False)
    tools = [adk_mcp_tool(name, annotations=safe)
             for name in ("admin_reset", "demo.search.clear", "demo.submit.click")]
    list_filter = ToolListFilter(
        impl.Policy.from_config(POLICY_CONFIG), server_id="demo", ctx=lambda context: context,
        message=lambda context: context["said"], focus=lambda context: context["looking_at"],
    )
    kept = list_filter(tools, {"role": "admin", "said": "reset", "looking_at": "demo:submit"})
    assert [tool.name for tool in kept] == ["admin_reset", "demo.submit.click"]
    assert all(any(k is t for t in tools) for k in kept)


def test_the_list_filter_fails_closed(caplog):
    def broken(readonly_context):
        raise AttributeError("no session")

    tools = [adk_mcp_tool("read_file"), adk_mcp_tool("x")]
    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        assert ToolListFilter(toolfilter_fast.Policy(), server_id="demo", focus=broken)(tools) == []
        assert ToolListFilter(toolfilter_fast.compile(), server_id="demo", ctx=broken)(
            tools, readonly()) == []
    assert caplog.text.count("every tool (2) of server 'demo' hidden") == 2
    assert ToolListFilter(toolfilter_fast.compile(exclude=["*/x"]), server_id="demo")(tools) == [
        tools[0],
    ]


def test_tool_predicate_takes_a_policy_it_can_apply_per_tool(impl):
    safe = mcp_types.ToolAnnotations(read_only_hint=False, destructive_hint=False)
    unbudgeted = {key: value for key, value in POLICY_CONFIG.items() if key != "budget"}
    predicate = tool_predicate(impl.Policy.from_config(unbudgeted), server_id="demo",
                               ctx=role_of)
    reset = adk_mcp_tool("admin_reset", annotations=safe)
    assert predicate(reset, readonly(["reset"], {"role": "admin"})) is True
    assert predicate(reset, readonly(["hello"], {"role": "admin"})) is False
    assert predicate(reset, readonly(["reset"], {"role": "user"})) is False
    click = adk_mcp_tool("demo.submit.click", annotations=safe)
    assert predicate(click, readonly(["x"], {"focus": "demo:search"})) is False
    assert predicate(click, readonly(["x"], {"focus": "demo:submit"})) is True
    with pytest.raises(TypeError, match=r"tool_predicate \(a toolset's tool_filter\) judges one "
                                        r"tool at a time.*\(max_tools=4\): use filtered_toolset"):
        tool_predicate(impl.Policy.from_config(POLICY_CONFIG), server_id="demo")


def test_filtered_toolset_needs_a_toolset():
    with pytest.raises(TypeError, match="toolset must be an ADK BaseToolset"):
        filtered_toolset(object(), toolfilter_fast.Policy(), server_id="demo")
    with pytest.raises(TypeError, match="server_id must be str"):
        filtered_toolset(FunctionTool(len), toolfilter_fast.Policy(), server_id=None)


# --- hints as the server sent them ------------------------------------------------------


def test_filtered_toolset_judges_hints_as_the_server_sent_them():
    from _raw_hints_server import SCRIPT as RAW_SCRIPT
    from test_sdk_hints import NO_DESTRUCTIVE, kept_as_sent

    async def main():
        toolset = filtered_toolset(McpToolset(connection_params=StdioConnectionParams(
            server_params=StdioServerParameters(command=sys.executable, args=[RAW_SCRIPT, "raw"]),
            timeout=60,
        )), NO_DESTRUCTIVE, server_id="raw")
        try:
            return [tool.name for tool in await toolset.get_tools(None)]
        finally:
            await toolset.close()

    assert asyncio.run(main()) == kept_as_sent() == ["read_file"]


def test_tool_predicate_refuses_a_policy_whose_relevance_needs_the_list(impl):
    with pytest.raises(TypeError, match=r"tool_predicate \(a toolset's tool_filter\) judges one "
                                        r"tool at a time.*\(relevance top_k=1\): use "
                                        r"filtered_toolset"):
        tool_predicate(impl.Policy.from_config({"relevance": {"top_k": 1}}), server_id="demo")
