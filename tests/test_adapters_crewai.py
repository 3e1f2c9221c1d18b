"""The CrewAI adapter, against the installed ``crewai`` and ``crewai-tools``
(CI runs this file in the venv of the mcp 1.x frameworks).

``mcp_tools`` spawns the SDK server of ``_mcp_sdk_server.py`` over stdio; a
tool call goes through CrewAI's own dispatch for an agent's action
(``execute_tool_and_check_finality``, what its ReAct loop runs), given the
tools an agent would be given. No model API is called; CrewAI's telemetry
and version check are switched off, so no traffic leaves the machine.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys

import pytest

if importlib.util.find_spec("crewai_tools") is None:
    pytest.skip("needs the crewai extra (CI: the mcp1 venv)", allow_module_level=True)

# Before CrewAI is imported, and only where it is: its telemetry and version check off.
os.environ["OTEL_SDK_DISABLED"] = "true"
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_DISABLE_VERSION_CHECK"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"

from _mcp_demo_server import POLICY_CONFIG
from _mcp_sdk_server import SCRIPT, role_rules
from crewai.agents.parser import AgentAction
from crewai.utilities.tool_utils import execute_tool_and_check_finality
from mcp import StdioServerParameters

from toolfilter_fast.adapters.crewai import mcp_tools

PARAMS = StdioServerParameters(command=sys.executable, args=[SCRIPT, "demo"])


RULES = role_rules()


def act(tools, name, arguments='{"path": "p"}'):
    """What CrewAI answers an agent whose action names ``name``."""
    action = AgentAction(thought="", tool=name, tool_input=arguments,
                         text=f"Action: {name}\nAction Input: {arguments}")
    return execute_tool_and_check_finality(action, [tool.to_structured_tool() for tool in tools])


def test_only_the_kept_tools_are_made_and_a_hidden_one_is_answered_as_a_missing_one():
    with mcp_tools(PARAMS, RULES, server_id="demo", context={"role": "user"}) as tools:
        made = [tool.name for tool in tools]
        hidden, missing, shown = act(tools, "delete_repo"), act(tools, "no_such_tool"), \
            act(tools, "read_file")
    assert made == ["read_file", "write_file", "demo_search_type_text", "demo_search_clear",
                    "demo_submit_click"]
    assert hidden.result == missing.result.replace("no_such_tool", "delete_repo")
    assert "delete_repo" in hidden.result and "read_file" in hidden.result
    assert shown.result == "read_file p"


def test_per_user_context_changes_the_tools():
    with mcp_tools(PARAMS, RULES, server_id="demo", context={"role": "admin"}) as tools:
        admin_made = [tool.name for tool in tools]
        reset = act(tools, "admin_reset", "{}")
    with mcp_tools(PARAMS, RULES, server_id="demo", context={"role": "user"}) as tools:
        user_made = [tool.name for tool in tools]
    assert "admin_reset" in admin_made and "admin_reset" not in user_made
    assert reset.result == "admin_reset"


def test_a_raising_ctx_hides_everything_and_logs(caplog):
    def broken(user):
        raise LookupError("no user")

    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"), \
            mcp_tools(PARAMS, RULES, server_id="demo", ctx=broken) as tools:
        assert list(tools) == []
    assert "LookupError" in caplog.text and "crewai" in caplog.text


def test_a_policy_is_judged_on_the_mcp_definitions(impl):
    policy = impl.Policy.from_config(POLICY_CONFIG)
    with mcp_tools(PARAMS, policy, server_id="demo", context={"role": "user", "focus": None},
                   message=lambda turn: "search") as tools:
        assert [tool.name for tool in tools] == ["read_file", "write_file",
                                                 "demo_search_type_text", "demo_search_clear"]
    with pytest.raises(TypeError, match="Policy"), \
            mcp_tools(PARAMS, RULES, server_id="demo", message=lambda turn: ""):
        pass


def test_hints_are_judged_as_the_server_sent_them():
    from _raw_hints_server import SCRIPT as RAW_SCRIPT
    from test_sdk_hints import NO_DESTRUCTIVE, kept_as_sent

    params = StdioServerParameters(command=sys.executable, args=[RAW_SCRIPT, "raw"])
    with mcp_tools(params, NO_DESTRUCTIVE, server_id="raw") as tools:
        assert [tool.name for tool in tools] == kept_as_sent() == ["read_file"]
