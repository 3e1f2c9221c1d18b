"""End to end: a real FastMCP server with ``ToolFilterTransform`` and a real MCP client.

In-memory transport for the hidden-versus-unknown checks; FastMCP's in-process
HTTP transport (the real Starlette app, auth and headers, no socket) for
per-user ctx from a bearer token and from headers.
"""

from __future__ import annotations

import asyncio

import pytest

import toolfilter_fast

fastmcp = pytest.importorskip("fastmcp", reason="needs the fastmcp extra")

from _mcp_demo_server import TOOL_NAMES, build_server  # noqa: E402
from fastmcp import Client, FastMCP  # noqa: E402
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier  # noqa: E402
from fastmcp.utilities.tests import asgi_client  # noqa: E402

from toolfilter_fast.adapters.fastmcp import FastMCPRequest, ToolFilterTransform  # noqa: E402


def is_admin(tool, request):
    return request.token is not None and "admin" in request.token.scopes


RULES = toolfilter_fast.compile(
    exclude=["*/delete_repo"], include=["demo/read_*", "demo/write_*", is_admin],
)

TOKENS = {
    "token-alice": {"client_id": "alice", "scopes": ["admin"]},
    "token-bob": {"client_id": "bob", "scopes": ["user"]},
}


def filtered_server(rules=RULES, **kwargs):
    return build_server(transforms=[ToolFilterTransform(rules, server_id="demo")], **kwargs)


async def failure(client, name, arguments):
    """How a call fails, in every form the client offers, with the name taken out."""

    def blank(text):
        return text.replace(repr(name), "NAME").replace(name, "NAME")

    with pytest.raises(Exception) as raised:
        await client.call_tool(name, arguments)
    result = await client.call_tool_mcp(name, arguments)
    assert result.is_error is True
    dumped = result.model_dump(mode="json", by_alias=True)
    return type(raised.value), blank(str(raised.value)), blank(repr(dumped))


def test_the_server_offers_every_tool_without_the_filter():
    async def main():
        async with Client(build_server()) as client:
            names = [tool.name for tool in await client.list_tools()]
            result = await client.call_tool("delete_repo", {"repo": "r"})
            return names, result.data

    assert asyncio.run(main()) == (list(TOOL_NAMES), "delete_repo r")


def test_a_hidden_tool_is_absent_and_fails_exactly_as_an_unknown_one():
    async def main():
        async with Client(filtered_server()) as client:
            names = [tool.name for tool in await client.list_tools()]
            statically_hidden = await failure(client, "delete_repo", {"repo": "r"})
            hidden_by_ctx = await failure(client, "admin_reset", {})
            missing = await failure(client, "never_existed", {"repo": "r"})
            missing_no_args = await failure(client, "never_existed_either", {})
            visible = await client.call_tool("read_file", {"path": "p"})
            return names, statically_hidden, hidden_by_ctx, missing, missing_no_args, visible.data

    names, statically_hidden, hidden_by_ctx, missing, missing_no_args, visible = asyncio.run(main())
    assert names == ["read_file", "write_file"]
    assert statically_hidden == missing
    assert hidden_by_ctx == missing_no_args
    error_type, message, _ = missing
    assert error_type is fastmcp.exceptions.ToolError
    assert message == "Unknown tool: NAME"
    assert visible == "read_file p"


def test_per_user_ctx_from_the_bearer_token_over_http():
    server = filtered_server(auth=StaticTokenVerifier(tokens=TOKENS))

    async def session(token):
        async with asgi_client(server, auth=token) as client:
            names = [tool.name for tool in await client.list_tools()]
            result = await client.call_tool_mcp("admin_reset", {})
            hidden = None if not result.is_error else await failure(client, "admin_reset", {})
            missing = await failure(client, "never_existed", {})
            return names, result, hidden, missing

    async def main():
        return await session("token-alice"), await session("token-bob")

    alice, bob = asyncio.run(main())
    assert alice[0] == ["read_file", "write_file", "admin_reset"]
    assert alice[1].is_error is False and alice[1].structured_content == {"result": "admin_reset"}
    assert alice[2] is None
    assert bob[0] == ["read_file", "write_file"]
    assert bob[1].is_error is True
    assert bob[2] == bob[3]            # bob's admin_reset fails as a name that never existed
    assert alice[3] == bob[3]          # and that is the same for everyone


def test_per_user_ctx_from_headers_over_http():
    def tenant(request: FastMCPRequest):
        return request.headers.get("x-tenant")

    rules = toolfilter_fast.compile(include=[lambda tool, tenant: tenant == "acme" or tool.name == "read_file"])
    server = build_server(transforms=[ToolFilterTransform(rules, server_id="demo", ctx=tenant)])

    async def names(headers):
        async with asgi_client(server, headers=headers) as client:
            return [tool.name for tool in await client.list_tools()]

    async def main():
        return await names({"X-Tenant": "acme"}), await names({"X-Tenant": "other"}), await names({})

    acme, other, anonymous = asyncio.run(main())
    assert acme == list(TOOL_NAMES)
    assert other == anonymous == ["read_file"]


def test_a_mounted_filtered_server_hides_through_the_parent():
    parent = FastMCP("parent")
    child = build_server("child", transforms=[ToolFilterTransform(RULES, server_id="demo")])
    parent.mount(child, namespace="gh")

    async def main():
        async with Client(parent) as client:
            names = [tool.name for tool in await client.list_tools()]
            hidden = await failure(client, "gh_delete_repo", {"repo": "r"})
            missing = await failure(client, "gh_never_existed", {"repo": "r"})
            return names, hidden, missing

    names, hidden, missing = asyncio.run(main())
    assert names == ["gh_read_file", "gh_write_file"]
    assert hidden == missing
