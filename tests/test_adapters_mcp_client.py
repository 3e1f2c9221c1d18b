"""The MCP SDK client adapter, against the installed ``mcp`` (1.x or 2.x: CI runs
this file in both venvs).

Each test opens a real ``ClientSession`` over stdio to the SDK server of
``_mcp_sdk_server.py`` and compares the filtered view with the session itself:
a hidden tool's call must get the server's own answer for a tool it never had,
and must not be sent.
"""

from __future__ import annotations

import json
import logging
import sys

import anyio
import pytest

pytest.importorskip("mcp", reason="needs the MCP SDK (the mcp or gateway extra)")

from _mcp_demo_server import POLICY_CONFIG
from _mcp_sdk_server import SCRIPT, TOOL_NAMES, role_rules
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from toolfilter_fast.adapters.mcp_client import FilteredSession, filter_session, unknown_tool


class Recording:
    """A session's stand-in that passes everything on and records the calls sent."""

    def __init__(self, session):
        self.session, self.sent = session, []

    async def list_tools(self, *args, **kwargs):
        return await self.session.list_tools(*args, **kwargs)

    async def call_tool(self, name, *args, **kwargs):
        self.sent.append(name)
        return await self.session.call_tool(name, *args, **kwargs)


def with_session(run):
    """``run(session)`` with a session to a fresh stdio server; its value."""
    async def main():
        params = StdioServerParameters(command=sys.executable, args=[SCRIPT, "demo"])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await run(session)

    return anyio.run(main)


def dump(result):
    return json.loads(result.model_dump_json(by_alias=True, exclude_none=True))


RULES = role_rules()


def test_hidden_tools_are_absent_and_their_calls_answered_as_the_server_answers_unknown_ones():
    async def run(session):
        recording = Recording(session)
        view = filter_session(recording, RULES, server_id="demo",
                              ctx=lambda session: {"role": "user"})
        names = [tool.name for tool in (await view.list_tools()).tools]
        hidden = dump(await view.call_tool("delete_repo", {"repo": "x"}))
        from_server = dump(await session.call_tool("no_such_tool", {}))
        shown = dump(await view.call_tool("read_file", {"path": "p"}))
        return names, hidden, from_server, shown, recording.sent

    names, hidden, from_server, shown, sent = with_session(run)
    assert names == ["read_file", "write_file", "demo.search.type_text", "demo.search.clear",
                     "demo.submit.click"]
    assert hidden == json.loads(json.dumps(from_server).replace("no_such_tool", "delete_repo"))
    assert hidden["isError"] is True
    assert "read_file p" in json.dumps(shown)
    assert sent == ["read_file"]                      # the hidden call never left


def test_a_name_the_server_never_had_gets_the_same_answer_locally():
    async def run(session):
        recording = Recording(session)
        view = filter_session(recording, RULES, server_id="demo")
        return dump(await view.call_tool("admin_reset")), dump(await view.call_tool("nope")), \
            recording.sent

    hidden, missing, sent = with_session(run)
    assert hidden == json.loads(json.dumps(missing).replace("nope", "admin_reset"))
    assert sent == []


def test_per_user_ctx_changes_the_list():
    async def run(session):
        lists = {}
        for role in ("user", "admin"):
            view = filter_session(session, RULES, server_id="demo",
                                  ctx=lambda session, role=role: {"role": role})
            lists[role] = [tool.name for tool in (await view.list_tools()).tools]
        admin_view = filter_session(session, RULES, server_id="demo",
                                    ctx=lambda session: {"role": "admin"})
        return lists, dump(await admin_view.call_tool("admin_reset"))

    lists, called = with_session(run)
    assert "admin_reset" in lists["admin"] and "admin_reset" not in lists["user"]
    assert called.get("isError") is not True and "admin_reset" in json.dumps(called)


def test_a_raising_ctx_hides_everything_and_logs(caplog):
    def broken(session):
        raise KeyError("no user")

    async def run(session):
        recording = Recording(session)
        view = filter_session(recording, RULES, server_id="demo", ctx=broken)
        return (await view.list_tools()).tools, dump(await view.call_tool("read_file", {"path": "p"})), \
            recording.sent

    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        tools, answer, sent = with_session(run)
    assert tools == []
    assert answer == dump(unknown_tool("read_file"))
    assert sent == []
    assert "KeyError" in caplog.text and "mcp-client" in caplog.text


def test_patterns_see_the_tool_as_the_server_lists_it(impl):
    seen = []

    def record(tool, ctx):
        seen.append(tool)
        return True

    async def run(session):
        view = filter_session(session, impl.compile(include=[record]), server_id="demo")
        return [tool.name for tool in (await view.list_tools()).tools]

    assert with_session(run) == list(TOOL_NAMES)
    delete = next(tool for tool in seen if tool.name == "delete_repo")
    assert (delete.server_id, delete.description) == ("demo", "Deletes a repository.")
    assert delete.annotations["destructiveHint"] is True
    assert delete.input_schema["required"] == ["repo"]


def test_a_policy_cuts_each_list_and_refuses_what_it_cut(impl):
    policy = impl.Policy.from_config(POLICY_CONFIG)

    async def run(session):
        view = filter_session(session, policy, server_id="demo",
                              ctx=lambda session: {"role": "admin"},
                              message=lambda session: "reset the cache")
        names = [tool.name for tool in (await view.list_tools()).tools]
        return names, dump(await view.call_tool("demo.search.clear")), \
            dump(await view.call_tool("admin_reset"))

    names, cut, kept = with_session(run)
    assert names == ["read_file", "write_file", "admin_reset", "demo.search.type_text"]
    assert cut == dump(unknown_tool("demo.search.clear"))
    assert kept.get("isError") is not True


def test_the_unknown_answer_can_be_replaced_and_other_attributes_pass():
    async def run(session):
        view = filter_session(session, RULES, server_id="demo",
                              unknown=lambda name: f"no {name}")
        return await view.call_tool("delete_repo", {}), await view.send_ping(), view

    answer, pong, view = with_session(run)
    assert answer == "no delete_repo"
    assert type(pong).__name__ == "EmptyResult"
    assert isinstance(view, FilteredSession) and "through FilteredSession" in repr(view)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"session": object()}, "ClientSession"),
    ({"tool_filter": object()}, "ToolFilter or a Policy"),
    ({"server_id": None}, "server_id"),
    ({"ctx": "admin"}, "ctx"),
    ({"unknown": "nope"}, "unknown"),
    ({"focus": lambda session: None}, "Policy"),
])
def test_bad_arguments_are_type_errors(kwargs, message):
    class Session:
        async def list_tools(self):
            return None

        async def call_tool(self, name):
            return None

    arguments = {"session": Session(), "tool_filter": RULES, "server_id": "demo", **kwargs}
    with pytest.raises(TypeError, match=message):
        filter_session(arguments.pop("session"), arguments.pop("tool_filter"), **arguments)


def test_hints_are_judged_as_the_server_sent_them():
    from _raw_hints_server import SCRIPT as RAW_SCRIPT
    from test_sdk_hints import NO_DESTRUCTIVE, kept_as_sent

    async def main():
        params = StdioServerParameters(command=sys.executable, args=[RAW_SCRIPT, "raw"])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            view = filter_session(session, NO_DESTRUCTIVE, server_id="raw")
            names = [tool.name for tool in (await view.list_tools()).tools]
            merge = dump(await view.call_tool("merge_pr", {}))
            never = dump(await view.call_tool("never_was", {}))
            read = dump(await view.call_tool("read_file", {}))
            return names, merge, never, read

    names, merge, never, read = anyio.run(main)
    assert names == kept_as_sent() == ["read_file"]
    assert merge == json.loads(json.dumps(never).replace("never_was", "merge_pr"))
    assert "ran read_file" in json.dumps(read)
