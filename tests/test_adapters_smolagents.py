"""The smolagents adapter, against the installed ``smolagents`` and mcpadapt
(CI runs this file in the venv of the mcp 1.x frameworks).

``tool_collection`` spawns the SDK server of ``_mcp_sdk_server.py`` over
stdio; a ``ToolCallingAgent`` runs a scripted ``Model`` that records the tools
it is offered, and the agent's own dispatch (``execute_tool_call``) is given a
hidden name and a missing one. No model API is called.
"""

from __future__ import annotations

import logging
import sys

import pytest

pytest.importorskip("smolagents", reason="needs the smolagents extra (CI: the mcp1 venv)")

from _mcp_demo_server import POLICY_CONFIG
from _mcp_sdk_server import SCRIPT, role_rules
from mcp import StdioServerParameters
from smolagents import Model, ToolCallingAgent
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction

from toolfilter_fast.adapters.smolagents import tool_collection

PARAMS = StdioServerParameters(command=sys.executable, args=[SCRIPT, "demo"])


RULES = role_rules()


class ScriptedModel(Model):
    """Calls each tool of its script in turn, then ``final_answer``; records the
    names of the tools each step offers it."""

    def __init__(self, script):
        super().__init__(model_id="scripted")
        self.script, self.offered = list(script), []

    def generate(self, messages, stop_sequences=None, response_format=None,
                 tools_to_call_from=None, **kwargs):
        self.offered.append([tool.name for tool in tools_to_call_from or []])
        name, arguments = self.script.pop(0) if self.script else ("final_answer", {"answer": "ok"})
        call = ChatMessageToolCall(id=str(len(self.offered)), type="function",
                                   function=ChatMessageToolCallFunction(name=name,
                                                                        arguments=arguments))
        return ChatMessage(role="assistant", content="", tool_calls=[call])


def unknown(agent, name):
    with pytest.raises(Exception, match="Unknown tool") as raised:
        agent.execute_tool_call(name, {})
    return type(raised.value), str(raised.value)


def names(collection):
    return [tool.name for tool in collection.tools]


def test_the_agent_is_offered_only_the_kept_tools_and_a_hidden_one_is_unknown():
    with tool_collection(PARAMS, RULES, server_id="demo", trust_remote_code=True,
                         context={"role": "user"}) as collection:
        model = ScriptedModel([("read_file", {"path": "p"})])
        agent = ToolCallingAgent(tools=collection.tools, model=model, max_steps=3,
                                 verbosity_level=0)
        answer = agent.run("go")
        hidden_type, hidden = unknown(agent, "delete_repo")
        missing_type, missing = unknown(agent, "no_such_tool")
        shown = agent.execute_tool_call("read_file", {"path": "q"})
    assert answer == "ok"
    assert model.offered[0] == ["read_file", "write_file", "demosearchtype_text",
                                "demosearchclear", "demosubmitclick", "final_answer"]
    assert hidden_type is missing_type
    assert hidden == missing.replace("no_such_tool", "delete_repo")
    assert "read_file q" in str(shown)


def test_per_user_context_changes_the_collection():
    with tool_collection(PARAMS, RULES, server_id="demo", trust_remote_code=True,
                         context={"role": "admin"}) as collection:
        admin_names = names(collection)
        reset = next(tool for tool in collection.tools if tool.name == "admin_reset")
        assert "admin_reset" in str(reset())
    with tool_collection(PARAMS, RULES, server_id="demo", trust_remote_code=True,
                         context={"role": "user"}) as collection:
        user_names = names(collection)
    assert "admin_reset" in admin_names and "admin_reset" not in user_names


def test_a_raising_ctx_hides_everything_and_logs(caplog):
    def broken(user):
        raise LookupError("no user")

    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"), \
            tool_collection(PARAMS, RULES, server_id="demo", trust_remote_code=True,
                            ctx=broken) as collection:
        assert collection.tools == []
    assert "LookupError" in caplog.text and "smolagents" in caplog.text


def test_patterns_see_the_mcp_definition_and_a_policy_cuts_the_list(impl):
    seen = []

    def record(tool, ctx):
        seen.append(tool)
        return True

    with tool_collection(PARAMS, impl.compile(include=[record]), server_id="demo",
                         trust_remote_code=True):
        pass
    clear = next(tool for tool in seen if tool.name == "demo.search.clear")
    assert clear.server_id == "demo" and clear.description == "Clears the search box."
    assert clear.annotations["destructiveHint"] is False
    policy = impl.Policy.from_config(POLICY_CONFIG)
    with tool_collection(PARAMS, policy, server_id="demo", trust_remote_code=True,
                         context={"role": "admin", "text": "reset it"},
                         message=lambda turn: turn["text"]) as collection:
        assert names(collection) == ["read_file", "write_file", "admin_reset",
                                     "demosearchtype_text"]


def test_bad_arguments_fail_before_the_server_starts():
    with pytest.raises(ValueError, match="trust_remote_code"), \
            tool_collection(PARAMS, RULES, server_id="demo"):
        pass
    with pytest.raises(TypeError, match="server_id"), \
            tool_collection(PARAMS, RULES, server_id=1, trust_remote_code=True):
        pass
    with pytest.raises(TypeError, match="one server at a time"), \
            tool_collection([PARAMS], RULES, server_id="demo", trust_remote_code=True):
        pass


def test_hints_are_judged_as_the_server_sent_them():
    from _raw_hints_server import SCRIPT as RAW_SCRIPT
    from test_sdk_hints import NO_DESTRUCTIVE, kept_as_sent

    params = StdioServerParameters(command=sys.executable, args=[RAW_SCRIPT, "raw"])
    with tool_collection(params, NO_DESTRUCTIVE, server_id="raw",
                         trust_remote_code=True) as collection:
        assert names(collection) == kept_as_sent() == ["read_file"]
