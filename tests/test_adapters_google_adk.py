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

from _mcp_demo_server import SCRIPT, TOOL_NAMES
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

from toolfilter_fast.adapters.google_adk import ToolFilterPredicate, tool_predicate


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
            call = types.FunctionCall(name=self.call, args={"repo": "r"})
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

