"""The LlamaIndex adapter, against the installed ``llama-index-tools-mcp``.

A ``BasicMCPClient`` spawns the SDK server of ``_mcp_sdk_server.py`` over stdio
(one process per request, as it does); a ``FunctionAgent`` runs LlamaIndex's
own ``MockFunctionCallingLLM`` with a scripted response that records the tools
it is offered and calls a hidden tool, a missing one and a shown one. No model
API is called.
"""

from __future__ import annotations

import asyncio
import logging
import sys

import pytest

pytest.importorskip("llama_index.tools.mcp", reason="needs the llama-index extra")

from _mcp_demo_server import POLICY_CONFIG
from _mcp_sdk_server import SCRIPT, role_rules
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

from toolfilter_fast.adapters.llama_index import filtered_tool_spec, tool_spec

# LlamaIndex reads its pydantic models through inspect, which touches deprecated attributes.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:inspect")


def demo_client():
    return BasicMCPClient(sys.executable, args=[SCRIPT, "demo"])


RULES = role_rules()


def tool_names(spec):
    return [tool.metadata.name for tool in asyncio.run(spec.to_tool_list_async())]


def run_agent(tools, calls):
    """What one agent run offered the model, and each tool call's output by name."""
    offered = []

    def respond(messages, **kwargs):
        offered.append([tool.metadata.name for tool in kwargs.get("tools", [])])
        if any(message.role == "tool" for message in messages):
            return ChatMessage(role="assistant", content="done")
        return ChatMessage(role="assistant", blocks=[
            ToolCallBlock(tool_call_id=str(i), tool_name=name, tool_kwargs=args)
            for i, (name, args) in enumerate(calls)])

    async def run():
        agent = FunctionAgent(tools=tools, llm=MockFunctionCallingLLM(response_generator=respond))
        handler = agent.run("go")
        outputs = {event.tool_name: event.tool_output async for event in handler.stream_events()
                   if isinstance(event, ToolCallResult)}
        await handler
        return outputs

    return offered, asyncio.run(run())


def test_the_agent_is_offered_only_the_kept_tools_and_a_hidden_one_is_not_found():
    spec = tool_spec(demo_client(), RULES, server_id="demo", context={"role": "user"})
    tools = asyncio.run(spec.to_tool_list_async())
    offered, outputs = run_agent(tools, [("delete_repo", {"repo": "x"}), ("no_such_tool", {}),
                                         ("read_file", {"path": "p"})])
    assert offered[0] == ["read_file", "write_file", "demo.search.type_text", "demo.search.clear",
                          "demo.submit.click"]
    hidden, missing = outputs["delete_repo"], outputs["no_such_tool"]
    assert hidden.is_error and missing.is_error
    assert hidden.content == missing.content.replace("no_such_tool", "delete_repo")
    assert not outputs["read_file"].is_error and "read_file p" in outputs["read_file"].content


def test_per_user_context_changes_the_list_and_each_call_is_checked_again():
    user = {"role": "admin"}
    spec = tool_spec(demo_client(), RULES, server_id="demo", context=user)
    tools = asyncio.run(spec.to_tool_list_async())
    reset = next(tool for tool in tools if tool.metadata.name == "admin_reset")
    as_admin = asyncio.run(reset.acall())
    user["role"] = "user"
    assert "admin_reset" not in tool_names(spec)
    as_user = asyncio.run(reset.acall())
    assert "admin_reset" in as_admin.content and "Unknown" not in as_admin.content
    assert as_user.raw_output.is_error is True
    assert [block.text for block in as_user.raw_output.content] == ["Unknown tool: admin_reset"]


def test_a_raising_ctx_hides_everything_and_logs(caplog):
    def broken(user):
        raise LookupError("no user")

    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        names = tool_names(tool_spec(demo_client(), RULES, server_id="demo", ctx=broken))
    assert names == []
    assert "LookupError" in caplog.text and "mcp-client" in caplog.text


def test_a_policy_reads_the_message_from_the_context(impl):
    policy = impl.Policy.from_config(POLICY_CONFIG)

    def names(message):
        return tool_names(tool_spec(demo_client(), policy, server_id="demo",
                                    context={"role": "admin", "message": message},
                                    ctx=lambda turn: turn, message=lambda turn: turn["message"]))

    assert names("reset the cache") == ["read_file", "write_file", "admin_reset",
                                        "demo.search.type_text"]
    assert "admin_reset" not in names("hello")


def test_a_spec_already_built_keeps_its_own_options():
    spec = McpToolSpec(demo_client(), allowed_tools=["read_file", "delete_repo", "admin_reset"])
    assert filtered_tool_spec(spec, RULES, server_id="demo") is spec
    assert tool_names(spec) == ["read_file"]
    with pytest.raises(TypeError, match="filtered already"):
        filtered_tool_spec(spec, RULES, server_id="demo")
    with pytest.raises(TypeError, match="McpToolSpec"):
        filtered_tool_spec(object(), RULES, server_id="demo")
    with pytest.raises(TypeError, match="server_id"):
        tool_spec(demo_client(), RULES, server_id=None)


def test_hints_are_judged_as_the_server_sent_them():
    from _raw_hints_server import SCRIPT as RAW_SCRIPT
    from test_sdk_hints import NO_DESTRUCTIVE, kept_as_sent

    spec = tool_spec(BasicMCPClient(sys.executable, args=[RAW_SCRIPT, "raw"]), NO_DESTRUCTIVE,
                     server_id="raw")
    assert tool_names(spec) == kept_as_sent() == ["read_file"]
