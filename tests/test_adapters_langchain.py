"""The LangChain adapter, against the installed ``langchain-mcp-adapters`` and
LangGraph (CI runs this file in the venv of the mcp 1.x frameworks).

A ``MultiServerMCPClient`` (and, for ``load_mcp_tools``, one of its sessions)
spawns the SDK server of ``_mcp_sdk_server.py`` over stdio; LangGraph's
``create_react_agent`` runs a scripted chat model that records the tools it is
bound to and names a hidden tool, a missing one and a shown one. No model API
is called.
"""

from __future__ import annotations

import asyncio
import logging
import sys

import pytest

import toolfilter_fast

pytest.importorskip("langchain_mcp_adapters", reason="needs the langchain extra (CI: the mcp1 venv)")

from _mcp_demo_server import POLICY_CONFIG
from _mcp_sdk_server import SCRIPT, TOOL_NAMES, is_admin
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_mcp_adapters.client import MultiServerMCPClient
from langgraph.prebuilt import create_react_agent
from pydantic import Field

from toolfilter_fast.adapters.langchain import filter_tools, get_tools, load_mcp_tools

pytestmark = pytest.mark.filterwarnings("ignore:create_react_agent has been moved")


def client(**options):
    servers = {name: {"command": sys.executable, "args": [SCRIPT, name], "transport": "stdio"}
               for name in ("demo", "other")}
    return MultiServerMCPClient(servers, **options)


# role_rules, and nothing of the second server.
RULES = toolfilter_fast.compile(exclude=[toolfilter_fast.Annotations(destructiveHint=True),
                                         "other/*"],
                                include=["*/read_*", "*/write_*", "*/demo.*", is_admin])


class ScriptedModel(GenericFakeChatModel):
    """Answers from its script, and records the tool names each bind offers it."""

    offered: list = Field(default_factory=list)

    def bind_tools(self, tools, **kwargs):
        self.offered.append([tool.name for tool in tools])
        return self


def run_agent(tools, calls):
    """The tool messages of one agent step whose model calls ``calls``, and what it was offered."""
    script = [AIMessage(content="", tool_calls=[
        {"name": name, "args": args, "id": str(i)} for i, (name, args) in enumerate(calls)]),
        AIMessage(content="done")]
    model = ScriptedModel(messages=iter(script), offered=[])
    agent = create_react_agent(model, tools)
    result = asyncio.run(agent.ainvoke({"messages": [("user", "go")]}))
    answers = {message.name: message for message in result["messages"]
               if isinstance(message, ToolMessage)}
    return model.offered, answers


def test_the_agent_is_given_only_the_kept_tools_and_a_hidden_one_is_an_invalid_name():
    tools = asyncio.run(get_tools(client(), RULES, context={"role": "user"}))
    offered, answers = run_agent(tools, [("delete_repo", {"repo": "x"}), ("no_such_tool", {}),
                                         ("read_file", {"path": "p"})])
    assert offered == [["read_file", "write_file", "demo.search.type_text", "demo.search.clear",
                        "demo.submit.click"]]
    hidden, missing = answers["delete_repo"].content, answers["no_such_tool"].content
    assert hidden == missing.replace("no_such_tool", "delete_repo")
    assert answers["delete_repo"].status == answers["no_such_tool"].status == "error"
    assert "read_file p" in str(answers["read_file"].content)


def test_per_user_context_changes_the_tools():
    for_admin = asyncio.run(get_tools(client(), RULES, server_name="demo",
                                      context={"role": "admin"}))
    for_user = asyncio.run(get_tools(client(), RULES, server_name="demo",
                                     context={"role": "user"}))
    assert "admin_reset" in [tool.name for tool in for_admin]
    assert "admin_reset" not in [tool.name for tool in for_user]
    _, answers = run_agent(for_admin, [("admin_reset", {})])
    assert answers["admin_reset"].status != "error"


def test_a_raising_ctx_hides_everything_and_logs(caplog):
    def broken(user):
        raise LookupError("no user")

    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        tools = asyncio.run(get_tools(client(), RULES, ctx=broken))
    assert tools == []
    assert "LookupError" in caplog.text and "langchain" in caplog.text


def test_prefixed_names_are_judged_by_the_mcp_name(impl):
    seen = []

    def record(tool, ctx):
        seen.append(tool)
        return True

    rules = impl.compile(include=[record], exclude=["*/delete_*"])
    tools = asyncio.run(get_tools(client(tool_name_prefix=True), rules))
    assert [tool.name for tool in tools][:3] == ["demo_read_file", "demo_write_file",
                                                 "demo_admin_reset"]
    assert "demo_delete_repo" not in [tool.name for tool in tools]
    delete = [tool for tool in seen if tool.name == "delete_repo"]
    assert delete == []                                  # static exclude decided first
    read = next(tool for tool in seen if (tool.server_id, tool.name) == ("other", "read_file"))
    assert read.description == "Reads a file."
    assert read.annotations["readOnlyHint"] is True
    assert read.input_schema["required"] == ["path"]


def test_load_mcp_tools_filters_the_session_and_checks_each_call_again():
    user = {"role": "admin"}

    async def run():
        async with client().session("demo") as session:
            tools = await load_mcp_tools(session, RULES, server_id="demo", context=user)
            reset = next(tool for tool in tools if tool.name == "admin_reset")
            as_admin = await reset.ainvoke({})
            user["role"] = "user"                  # the same tools, now for a user
            as_user = await reset.ainvoke({})
            unknown = (await session.call_tool("no_such_tool", {})).content[0].text
            return [tool.name for tool in tools], as_admin, as_user, unknown

    names, as_admin, as_user, unknown = asyncio.run(run())
    assert names == ["read_file", "write_file", "admin_reset", "demo.search.type_text",
                     "demo.search.clear", "demo.submit.click"]
    assert "admin_reset" in str(as_admin) and "Unknown" not in str(as_admin)
    assert unknown == "Unknown tool: no_such_tool"
    assert [block["text"] for block in as_user] == ["Unknown tool: admin_reset"]


def test_a_policy_through_load_mcp_tools_reads_the_context():
    policy = toolfilter_fast.Policy.from_config(POLICY_CONFIG)

    async def run(message):
        async with client().session("demo") as session:
            tools = await load_mcp_tools(session, policy, server_id="demo",
                                         context={"role": "admin"},
                                         message=lambda user: message)
            return [tool.name for tool in tools]

    assert asyncio.run(run("reset it")) == ["read_file", "write_file", "admin_reset",
                                            "demo.search.type_text"]
    assert "admin_reset" not in asyncio.run(run("hello"))


def test_filter_tools_keeps_the_objects_and_bad_arguments_are_type_errors():
    tools = asyncio.run(client().get_tools(server_name="demo"))
    assert [tool.name for tool in tools] == list(TOOL_NAMES)
    kept = filter_tools(tools, toolfilter_fast.compile(include=["demo/read_*"]), server_id="demo")
    assert kept == [tools[0]] and kept[0] is tools[0]
    with pytest.raises(TypeError, match="MultiServerMCPClient"):
        asyncio.run(get_tools(object(), RULES))
    with pytest.raises(TypeError, match="Policy"):
        filter_tools(tools, RULES, server_id="demo", message=lambda user: "")
    with pytest.raises(TypeError, match="prefix"):
        filter_tools(tools, RULES, server_id="demo", prefix=1)


# --- hints as the server sent them ------------------------------------------------------


def raw_client():
    from _raw_hints_server import SCRIPT as RAW_SCRIPT

    return MultiServerMCPClient(
        {"raw": {"command": sys.executable, "args": [RAW_SCRIPT, "raw"], "transport": "stdio"}})


def test_get_tools_judges_hints_as_the_server_sent_them():
    from test_sdk_hints import NO_DESTRUCTIVE, kept_as_sent

    tools = asyncio.run(get_tools(raw_client(), NO_DESTRUCTIVE))
    assert [tool.name for tool in tools] == kept_as_sent() == ["read_file"]


def test_load_mcp_tools_judges_hints_as_the_server_sent_them():
    from test_sdk_hints import NO_DESTRUCTIVE, kept_as_sent

    async def main():
        async with raw_client().session("raw") as session:
            tools = await load_mcp_tools(session, NO_DESTRUCTIVE, server_id="raw")
            return [tool.name for tool in tools]

    assert asyncio.run(main()) == kept_as_sent()
