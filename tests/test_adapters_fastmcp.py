"""``ToolFilterTransform`` against the installed FastMCP: what it reads, when, and how it fails.

The hidden-versus-unknown and per-user checks over a real client are in
``test_mcp_roundtrip.py``.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

import toolfilter_fast

fastmcp = pytest.importorskip("fastmcp", reason="needs the fastmcp extra")

from _mcp_demo_server import TOOL_NAMES, build_server  # noqa: E402
from fastmcp import Client  # noqa: E402
from fastmcp.server.transforms import Transform  # noqa: E402

from toolfilter_fast.adapters.fastmcp import FastMCPRequest, ToolFilterTransform  # noqa: E402


def listed(server, **client_kwargs):
    async def main():
        async with Client(server, **client_kwargs) as client:
            return [tool.name for tool in await client.list_tools()]

    return asyncio.run(main())


def test_is_a_fastmcp_transform():
    transform = ToolFilterTransform(toolfilter_fast.compile(), server_id="demo")
    assert isinstance(transform, Transform)
    assert repr(transform) == (
        "ToolFilterTransform(ToolFilter.compile(include=[], exclude=[]), server_id='demo')"
    )


def test_patterns_see_the_given_server_id(impl):
    def server(server_id):
        rules = impl.compile(include=["demo/read_file"])
        return build_server(transforms=[ToolFilterTransform(rules, server_id=server_id)])

    assert listed(server("demo")) == ["read_file"]
    assert listed(server("other")) == []


def test_function_patterns_read_schema_and_camel_case_annotations(impl):
    seen = {}

    def destructive(tool, request):
        seen[tool.name] = tool
        return (tool.annotations or {}).get("destructiveHint") is True

    rules = impl.compile(exclude=[destructive])
    assert listed(build_server(transforms=[ToolFilterTransform(rules, server_id="demo")])) == [
        "read_file", "write_file", "admin_reset",
    ]
    delete = seen["delete_repo"]
    assert delete.server_id == "demo" and delete.description == "Deletes a repository."
    assert delete.annotations == {"destructiveHint": True}
    assert delete.input_schema["properties"]["repo"]["type"] == "string"
    assert seen["read_file"].annotations == {"readOnlyHint": True}
    assert seen["admin_reset"].annotations is None


def test_default_ctx_is_the_request_in_memory():
    requests = []

    def record(tool, request):
        # Context reads the request lazily: look while the request is in flight.
        requests.append((request, request.context.request_context is not None))
        return True

    rules = toolfilter_fast.compile(include=[record])
    listed(build_server(transforms=[ToolFilterTransform(rules, server_id="demo")]))
    assert requests and all(isinstance(request, FastMCPRequest) for request, _ in requests)
    request, in_request = requests[0]
    assert request.token is None          # no auth in memory
    assert request.headers == {}          # no HTTP
    assert in_request


def test_ctx_function_receives_the_request():
    client_names = []

    def client_name(request):
        info = request.context.request_context.meta["io.modelcontextprotocol/clientInfo"]
        client_names.append(info["name"])
        return info["name"]

    rules = toolfilter_fast.compile(include=[lambda tool, name: name == "trusted-ui"])
    server = build_server(
        transforms=[ToolFilterTransform(rules, server_id="demo", ctx=client_name)],
    )
    implementation = fastmcp.client.client.mcp_types.Implementation
    assert listed(server, client_info=implementation(name="trusted-ui", version="1")) == list(TOOL_NAMES)
    assert listed(server, client_info=implementation(name="other", version="1")) == []
    assert set(client_names) == {"trusted-ui", "other"}


def test_outside_a_request_only_static_patterns_apply():
    calls = []

    def never_true(tool, request):
        calls.append(tool.name)
        return False

    rules = toolfilter_fast.compile(exclude=["*/delete_repo"], include=["*/read_*", never_true])
    server = build_server(transforms=[ToolFilterTransform(rules, server_id="demo")])

    async def main():
        names = [tool.name for tool in await server.list_tools()]
        deleted = await server.get_tool("delete_repo")
        reset = await server.get_tool("admin_reset")
        return names, deleted, reset

    names, deleted, reset = asyncio.run(main())
    assert names == ["read_file", "write_file", "admin_reset"]
    assert deleted is None and reset is not None and reset.name == "admin_reset"
    assert calls == []
    # A client asking is judged with its ctx: the function now decides.
    assert listed(server) == ["read_file"]
    assert "admin_reset" in calls


def test_a_failing_ctx_hides_every_tool_and_the_server_goes_on(caplog):
    state = {"broken": True}

    def flaky(request):
        if state["broken"]:
            raise ConnectionError("user store down")
        return "ok"

    server = build_server(
        transforms=[ToolFilterTransform(toolfilter_fast.compile(), server_id="demo", ctx=flaky)],
    )

    async def main():
        async with Client(server) as client:
            names = [tool.name for tool in await client.list_tools()]
            call = await client.call_tool_mcp("read_file", {"path": "p"})
            state["broken"] = False
            after = [tool.name for tool in await client.list_tools()]
            return names, call, after

    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        names, call, after = asyncio.run(main())
    assert names == []
    assert call.is_error and call.content[0].text == "Unknown tool: 'read_file'"
    assert after == list(TOOL_NAMES)
    assert "ConnectionError" in caplog.text and "server 'demo'" in caplog.text


def test_a_filter_that_raises_hides_and_never_fails_the_request():
    class Exploding:
        def visible(self, tool, ctx=None):
            raise RuntimeError("boom")

        filter = visible

        def static_visible(self, tool):
            return True

    server = build_server(transforms=[ToolFilterTransform(Exploding(), server_id="demo")])

    async def main():
        async with Client(server) as client:
            names = [tool.name for tool in await client.list_tools()]
            call = await client.call_tool_mcp("read_file", {"path": "p"})
            return names, call

    names, call = asyncio.run(main())
    assert names == []
    assert call.is_error and call.content[0].text == "Unknown tool: 'read_file'"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"server_id": None}, "server_id must be str, not NoneType"),
        ({"tool_filter": {"exclude": ["x"]}}, "tool_filter must be a ToolFilter"),
        ({"ctx": "headers"}, "ctx must be a function"),
    ],
)
def test_bad_arguments_are_type_errors(kwargs, message):
    arguments = {"tool_filter": toolfilter_fast.compile(), "server_id": "demo", **kwargs}
    with pytest.raises(TypeError, match=message):
        ToolFilterTransform(arguments.pop("tool_filter"), **arguments)
