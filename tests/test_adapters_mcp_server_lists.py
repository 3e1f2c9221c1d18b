"""The MCP SDK server adapter (mcp 2.x): list filtering by ``params.filter``
(advertised in the capabilities, checked, never widening the rules, cursors
bound to the filter) and a Policy's ``[[rename]]``, on the SDK's own servers.

Lists with a filter are read over stdio by a raw JSON-RPC client (the SDK's
typed client drops ``params.filter`` and a capability's ``filtering``);
renames in process, by the SDK's own client. mcp 1.x has no list filtering
and no renaming here (its typed handlers never see ``filter``): see the
module ``toolfilter_fast.adapters.mcp_server``.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="needs the MCP SDK (the mcp extra)")

from _mcp_sdk_server import MODERN, SCRIPT, build_lowlevel_server, build_server
from _raw_mcp import RawStdio, RpcError

from toolfilter_fast import Policy
from toolfilter_fast.adapters.mcp_server import ToolFilterMiddleware, filter_server

pytestmark = pytest.mark.skipif(not MODERN, reason="list filtering and renames need mcp 2.x's "
                                                   "middleware (1.x: none, as documented)")


@pytest.mark.parametrize("kind", ["high-level", "lowlevel"])
def test_a_filtered_server_filters_its_lists_by_params(kind):
    args = [SCRIPT, "demo", *(["lowlevel"] if kind == "lowlevel" else []), "filtered",
            "_mcp_sdk_server:no_destructive_tools"]
    with RawStdio([sys.executable, *args]) as client:
        capabilities = client.initialize()["capabilities"]
        meta = {"role": "user"}
        everything = client.request("tools/list", {"_meta": meta})
        narrowed = client.request("tools/list", {"_meta": meta, "filter": {
            "namePatterns": ["demo.search.*", "delete_*", "?rite_file"]}})
        with pytest.raises(RpcError) as raised:
            client.request("tools/list", {"filter": {"namePatterns": ["x"] * 101}})
        # Filtered out, shown by the rules: still runs. Hidden: still unknown.
        write = client.request("tools/call", {"name": "write_file", "_meta": meta,
                                              "arguments": {"path": "p"}})
    assert capabilities["tools"]["filtering"] == {"supported": ["namePatterns"]}
    assert [t["name"] for t in everything["tools"]] == [
        "read_file", "write_file", "demo.search.type_text", "demo.search.clear",
        "demo.submit.click"]
    # delete_repo matches delete_*, but the rules hide it.
    assert [t["name"] for t in narrowed["tools"]] == [
        "write_file", "demo.search.type_text", "demo.search.clear"]
    assert (raised.value.code, raised.value.message) == (
        -32602, "Too many patterns: 101 exceeds maximum of 100")
    assert not write.get("isError") and "write_file" in str(write["content"])


@dataclass
class Ctx:
    """What the middleware reads of the SDK's request context."""

    method: str
    params: Any = None
    request: Any = None


def test_the_adapter_binds_a_servers_own_cursors_to_the_filter():
    pages = {None: (["a1", "b1"], "p2"), "p2": (["a2", "b2"], None)}
    seen = []

    async def call_next(ctx):
        seen.append(ctx.params.get("cursor"))
        tools, cursor = pages[ctx.params.get("cursor")]
        return {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in tools],
                **({"nextCursor": cursor} if cursor else {})}

    middleware = ToolFilterMiddleware(Policy(), server_id="s")

    async def main():
        first = await middleware(Ctx("tools/list", {"filter": {"namePatterns": ["a?"]}}),
                                 call_next)
        second = await middleware(Ctx("tools/list", {"filter": {"namePatterns": ["a?"]},
                                                     "cursor": first["nextCursor"]}), call_next)
        try:
            await middleware(Ctx("tools/list", {"cursor": first["nextCursor"]}), call_next)
        except Exception as err:  # the SDK's MCPError
            return first, second, err.error.code, err.error.message
        raise AssertionError("a changed filter was let through")

    first, second, code, message = asyncio.run(main())
    assert [t["name"] for t in first["tools"]] == ["a1"] and first["nextCursor"] != "p2"
    assert [t["name"] for t in second["tools"]] == ["a2"] and "nextCursor" not in second
    assert seen == [None, "p2"]  # the server's own cursor, unwrapped
    assert (code, message) == (-32602, "Filter parameters must not change between paginated "
                                       "requests")


RENAMES = [
    {"server": "demo", "tool": "read_file", "name": "open_file",
     "description": "Opens a file for reading."},
    {"server": "demo", "tool": "delete_repo", "name": "remove_repo"},
    {"server": "demo", "tool": "admin_reset", "name": "write_file"},  # takes a listed name
]


@pytest.mark.parametrize("build", [build_server, build_lowlevel_server])
def test_a_policys_renames_are_shown_and_mapped_back_on_call(build):
    policy = Policy.from_config({"filter": {"exclude": [{"annotations": {
        "destructiveHint": True}}]}, "rename": RENAMES})
    server = filter_server(build("demo"), policy, server_id="demo")

    async def main():
        from mcp.client.client import Client
        from mcp.shared.exceptions import MCPError

        async with Client(server) as client:
            listed = (await client.list_tools()).tools
            answers = {}
            for name in ("open_file", "read_file", "remove_repo", "write_file", "never_was"):
                try:
                    result = await client.call_tool(name, {"path": "p", "repo": "r"})
                except MCPError as err:  # the low-level server's answer to an unknown name
                    answers[name] = {"error": err.error.code, "message": err.error.message}
                else:
                    answers[name] = result.model_dump(by_alias=True, exclude_none=True)
            return listed, answers

    listed, answers = anyio.run(main)
    shown = {tool.name: tool.description for tool in listed}
    # write_file and admin_reset's new name clash: neither is listed.
    assert list(shown) == ["open_file", "demo.search.type_text", "demo.search.clear",
                           "demo.submit.click"]
    assert shown["open_file"] == "Opens a file for reading."
    assert "read_file" in str(answers["open_file"]) and "error" not in answers["open_file"]
    unknown = str(answers["never_was"])
    for name in ("read_file", "remove_repo", "write_file"):
        assert str(answers[name]) == unknown.replace("never_was", name), name
