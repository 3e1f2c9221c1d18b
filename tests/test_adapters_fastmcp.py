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

from _mcp_demo_server import (  # noqa: E402
    POLICY_CONFIG,
    POLICY_TOOL_NAMES,
    TOOL_NAMES,
    build_policy_server,
    build_server,
)
from fastmcp import Client, FastMCP  # noqa: E402
from fastmcp.server.auth.providers.jwt import StaticTokenVerifier  # noqa: E402
from fastmcp.server.transforms import Transform  # noqa: E402
from fastmcp.utilities.tests import asgi_client  # noqa: E402
from mcp_types import PaginatedRequestParams  # noqa: E402

from toolfilter_fast.adapters.fastmcp import (  # noqa: E402
    FOCUS_KEY,
    MESSAGE_KEY,
    FastMCPRequest,
    ToolFilterTransform,
    _ListRecord,
    apply_cache_scope,
)


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


# --- a Policy ------------------------------------------------------------------------

TOKENS = {"token-root": {"client_id": "root", "scopes": ["admin"]},
          "token-bob": {"client_id": "bob", "scopes": ["user"]}}


def role(request):
    """The CEL pattern's ctx: the caller's role, from the bearer token."""
    admin = request.token is not None and "admin" in request.token.scopes
    return {"role": "admin" if admin else "user"}


def turn(message=None, focus=None):
    """A request ``_meta`` carrying the turn's message and focus."""
    meta = {} if message is None else {MESSAGE_KEY: message}
    return meta if focus is None else {**meta, FOCUS_KEY: focus}


async def list_turn(client, meta):
    """A tools/list with ``_meta``: the names and the result's cache fields."""
    result = await client.session.list_tools(params=PaginatedRequestParams(_meta=meta))
    return [tool.name for tool in result.tools], result.cache_scope, result.ttl_ms


async def call_turn(client, name, arguments, meta):
    """How a tools/call with ``_meta`` ends: whether it was an error, its text
    and the whole result, the name taken out."""
    result = await client.call_tool_mcp(name, arguments, meta=meta)
    dumped = repr(result.model_dump(mode="json", by_alias=True))
    return (result.is_error, result.content[0].text.replace(repr(name), "NAME"),
            dumped.replace(name, "NAME"))


def policy_server(impl=toolfilter_fast, config=POLICY_CONFIG, **kwargs):
    policy = impl.Policy.from_config(config)
    return build_policy_server(
        transforms=[ToolFilterTransform(policy, server_id="demo", ctx=role)],
        auth=StaticTokenVerifier(tokens=TOKENS), **kwargs,
    )


def test_a_policy_with_all_four_stages_over_http(impl):
    server = policy_server(impl)
    reset = turn("please reset the cache", "demo:search")

    async def main():
        async with asgi_client(server, auth="token-root") as root:
            turns = [
                await list_turn(root, reset),
                await call_turn(root, "read_file", {"path": "p"}, reset),
                await call_turn(root, "demo.search.clear", {}, reset),       # cut by the budget
                await call_turn(root, "never_existed", {}, reset),
                await call_turn(root, "demo.search.clear", {}, turn("hello")),  # not cut now
                await list_turn(root, turn("hello", "demo:submit")),
            ]
        async with asgi_client(server, auth="token-bob") as bob:
            turns.append(await list_turn(bob, reset))
            turns.append(await call_turn(bob, "admin_reset", {}, reset))
        return turns

    turns = asyncio.run(main())
    assert turns[0][0] == ["read_file", "write_file", "admin_reset", "demo.search.type_text"]
    assert turns[1][:2] == (False, "read_file p")
    # Cut by the budget this turn: the very answer a name that never existed gets.
    assert turns[2] == turns[3]
    assert turns[2][:2] == (True, "Unknown tool: NAME")
    assert turns[4][:2] == (False, "demo.search.clear")
    assert turns[5][0] == ["read_file", "write_file", "demo.submit.click"]
    assert turns[6][0] == ["read_file", "write_file", "demo.search.type_text", "demo.search.clear"]
    assert turns[7][:2] == (True, "Unknown tool: NAME")


def test_a_mounted_policy_decides_calls_through_the_parent():
    parent = FastMCP("parent")
    child = build_policy_server("child", transforms=[ToolFilterTransform(
        toolfilter_fast.Policy.from_config(POLICY_CONFIG), server_id="demo",
        ctx=lambda request: {"role": "admin"},
    )])
    parent.mount(child, namespace="gh")
    reset = turn("reset", "demo:search")

    async def main():
        async with Client(parent) as client:
            return [await list_turn(client, reset),
                    await call_turn(client, "gh_demo.search.type_text", {}, reset),
                    await call_turn(client, "gh_demo.search.clear", {}, reset),
                    await call_turn(client, "gh_never_existed", {}, reset)]

    listed, kept, cut, missing = asyncio.run(main())
    assert listed[0] == ["gh_read_file", "gh_write_file", "gh_admin_reset",
                         "gh_demo.search.type_text"]
    assert kept[:2] == (False, "demo.search.type_text")
    assert cut == missing
    assert cut[:2] == (True, "Unknown tool: NAME")


def test_a_policy_outside_a_request_applies_its_static_patterns_only():
    server = policy_server()

    async def main():
        return ([tool.name for tool in await server.list_tools()],
                await server.get_tool("delete_repo"), await server.get_tool("demo.submit.click"))

    names, deleted, click = asyncio.run(main())
    # The annotation pattern is static; the CEL pattern reads ctx; groups, focus
    # and budget are per turn.
    assert names == [name for name in POLICY_TOOL_NAMES if name != "delete_repo"]
    assert deleted is None and click is not None


def test_message_and_focus_functions_get_the_request():
    server = build_policy_server(transforms=[ToolFilterTransform(
        toolfilter_fast.Policy.from_config(POLICY_CONFIG), server_id="demo",
        ctx=lambda request: {"role": "admin"},
        message=lambda request: request.headers.get("x-turn-message"),
        focus=lambda request: request.headers.get("x-focus"),
    )])

    async def main():
        headers = {"X-Turn-Message": "reset", "X-Focus": "demo:submit"}
        async with asgi_client(server, headers=headers) as client:
            return await list_turn(client, turn("ignored", "demo:search"))

    assert asyncio.run(main())[0] == ["read_file", "write_file", "admin_reset",
                                      "demo.submit.click"]


@pytest.mark.parametrize("meta", [turn("reset", "not a focus:"), turn("reset", 7),
                                  {MESSAGE_KEY: 42}])
def test_a_policy_that_raises_hides_every_tool_and_the_server_goes_on(caplog, meta):
    server = build_policy_server(transforms=[ToolFilterTransform(
        toolfilter_fast.Policy.from_config(POLICY_CONFIG), server_id="demo",
        ctx=lambda request: {"role": "admin"},
    )])

    async def main():
        async with Client(server) as client:
            return (await list_turn(client, meta),
                    await call_turn(client, "read_file", {"path": "p"}, meta),
                    await list_turn(client, turn("reset")))

    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        names, call, after = asyncio.run(main())
    assert names[0] == []
    assert call[:2] == (True, "Unknown tool: NAME")
    assert "every tool (7) of server 'demo' hidden" in caplog.text
    assert after[0] == ["read_file", "write_file", "admin_reset", "demo.search.type_text"]


# --- the cache scope ------------------------------------------------------------------

def cache_fields(transform, meta=None, scope_applied=True, token=None):
    """The cache fields of one tools/list of a server that says ``public``
    for 60 s, through ``transform``."""
    auth = None if token is None else StaticTokenVerifier(tokens=TOKENS)
    server = build_policy_server(transforms=[transform], cache_ttl=60, cache_scope="public",
                                 auth=auth)
    if scope_applied:
        assert apply_cache_scope(server) is server

    async def main():
        async with asgi_client(server, auth=token) as client:
            return await list_turn(client, meta or {})

    _, scope, ttl = asyncio.run(main())
    return scope, ttl


def transform(rules, **kwargs):
    return ToolFilterTransform(rules, server_id="demo", **kwargs)


STATIC = {"filter": {"exclude": [{"annotations": {"destructiveHint": True}}]},
          "tool_filter_groups": [{"mode": "always", "tools": ["demo__*"]}],
          "budget": {"max_tools": 3}}


def test_fastmcp_alone_sends_its_own_scope_whatever_the_list_read():
    # The problem apply_cache_scope solves: a per-user list marked shareable.
    policy = toolfilter_fast.Policy.from_config(POLICY_CONFIG)
    assert cache_fields(transform(policy, ctx=role), turn("reset"), scope_applied=False) == (
        "public", 60000,
    )


def test_a_list_that_read_the_turn_is_private_and_not_cached():
    policy = toolfilter_fast.Policy.from_config(POLICY_CONFIG)
    assert cache_fields(transform(policy, ctx=role), turn("reset")) == ("private", 0)
    focus_only = toolfilter_fast.Policy.from_config({**STATIC, "tool_filter_groups": []})
    assert cache_fields(transform(focus_only), turn(focus="demo:search")) == ("private", 0)


def test_a_list_that_read_only_ctx_is_private_and_keeps_the_servers_ttl():
    config = {**STATIC, "filter": {"exclude": [{"cel": 'ctx.role != "admin"'}]}}
    policy = toolfilter_fast.Policy.from_config(config)
    assert cache_fields(transform(policy, ctx=role), token="token-root") == ("private", 60000)
    assert cache_fields(transform(toolfilter_fast.compile(include=[is_admin_tool]))) == (
        "private", 60000,
    )


def is_admin_tool(tool, request):
    return request.token is not None


def test_a_list_that_read_nothing_keeps_the_servers_scope():
    assert cache_fields(transform(toolfilter_fast.Policy.from_config(STATIC))) == ("public", 60000)
    assert cache_fields(transform(toolfilter_fast.compile(exclude=["*/delete_*"]))) == (
        "public", 60000,
    )


def test_a_list_hidden_by_a_failure_is_private_and_not_cached():
    def broken(request):
        raise ConnectionError("user store down")

    assert cache_fields(transform(toolfilter_fast.compile(), ctx=broken)) == ("private", 0)
    policy = toolfilter_fast.Policy.from_config(STATIC)
    assert cache_fields(transform(policy, message=broken)) == ("private", 0)


def test_apply_cache_scope_installs_once_and_only_on_a_fastmcp_server():
    server = build_policy_server()
    apply_cache_scope(apply_cache_scope(server))
    names = [repr(middleware) for middleware in server._mcp_server.middleware]
    assert names.count("toolfilter_fast cache scope") == 1
    with pytest.raises(TypeError, match="apply_cache_scope needs a FastMCP server"):
        apply_cache_scope(object())


def test_a_session_of_an_earlier_revision_gets_no_cache_fields():
    policy = toolfilter_fast.Policy.from_config(POLICY_CONFIG)
    server = apply_cache_scope(build_policy_server(
        transforms=[transform(policy, ctx=role)], cache_ttl=60, cache_scope="public",
    ))

    async def main():
        async with Client(server, mode="legacy") as client:
            return client.protocol_version, await client.list_tools_mcp()

    version, result = asyncio.run(main())
    assert version == "2025-11-25"
    assert result.model_fields_set == {"tools"}
    assert [tool.name for tool in result.tools] == [
        "read_file", "write_file", "demo.search.type_text", "demo.search.clear",
    ]


def test_the_record_sets_only_the_fields_a_result_has():
    record = _ListRecord()
    record.add("private", True)
    assert record.apply({"tools": []}) == {"tools": []}  # before 2026-07-28: no cache fields
    assert record.apply({"tools": [], "ttlMs": 5, "cacheScope": "public"}) == {
        "tools": [], "ttlMs": 0, "cacheScope": "private",
    }


def test_a_relevance_policy_lets_a_call_through_only_when_its_listing_shows_the_tool(impl):
    # Relevance keeps a tool by the others of its list: a tool the listing of the
    # turn ranked out is answered as a name that never existed.
    server = policy_server(impl, {"relevance": {"top_k": 2}})
    meta = turn("read a file")

    async def main():
        async with asgi_client(server, auth="token-bob") as client:
            names, _, _ = await list_turn(client, meta)
            answers = {name: await call_turn(client, name, {"path": "p"}, meta)
                       for name in [*POLICY_TOOL_NAMES, "never_existed"]}
            return names, answers

    names, answers = asyncio.run(main())
    assert len(names) == 2
    for name in POLICY_TOOL_NAMES:
        if name in names:
            assert answers[name][0] is False and name in answers[name][1]
        else:
            assert answers[name] == answers["never_existed"], name


# --- prompts and resources ------------------------------------------------------------------

#: A policy that hides the tool fetch, the debug prompts, and the secret:// and
#: notes://private* resources (their templates too).
EXTRAS_POLICY = {
    "filter": {"exclude": ["*/fetch"]},
    "prompts": {"exclude": ["*/debug_*"]},
    "resources": {"exclude": ["*/secret://*", "*/notes://private*"]},
}


def extras_server(rules, name="demo"):
    """A FastMCP server with tools, prompts, resources and templates, some named
    like its tools, filtered by ``rules``."""
    server = FastMCP(name, transforms=[ToolFilterTransform(rules, server_id="demo")])
    for tool in ("fetch", "read_file"):
        server.tool(lambda url="": "ran", name=tool)
    for prompt in ("fetch", "summary", "debug_dump"):
        server.prompt(lambda: "a prompt", name=prompt)
    for uri, resource in (("docs://readme", "readme"), ("secret://key", "key"),
                          ("data://fetch", "fetch")):
        server.resource(uri, name=resource)(lambda: "text")
    for template, resource in (("notes://{id}", "note"), ("secret://{key}", "secret")):
        server.resource(template, name=resource)(lambda **kwargs: "note text")
    return server


async def extras_seen(server):
    """What a client lists and gets: the names, and each get or read's answer
    (its text, or the error's text)."""
    async def answer(make, name):
        try:
            await make(name)
        except Exception as err:
            return f"error: {err}"
        return "shown"

    async with Client(server) as client:
        seen = {
            "prompts": sorted(p.name for p in await client.list_prompts()),
            "resources": sorted(str(r.uri) for r in await client.list_resources()),
            # `uri_template` since the MCP SDK 2 (its old name warns there).
            "templates": sorted(getattr(t, "uri_template", None) or t.uriTemplate
                                for t in await client.list_resource_templates()),
        }
        for name in ("fetch", "summary", "debug_dump", "never_was"):
            seen[f"get {name}"] = await answer(client.get_prompt, name)
        for uri in ("docs://readme", "secret://key", "data://fetch", "notes://1",
                    "notes://private1", "secret://other", "nothing://here"):
            seen[f"read {uri}"] = await answer(client.read_resource, uri)
        return seen


def test_prompts_and_resources_are_hidden_by_the_policy_on_every_path(impl):
    seen = asyncio.run(extras_seen(extras_server(impl.Policy.from_config(EXTRAS_POLICY))))
    assert seen["prompts"] == ["summary"]
    assert seen["resources"] == ["docs://readme"]
    assert seen["templates"] == ["notes://{id}"]
    assert seen["get summary"] == seen["read docs://readme"] == seen["read notes://1"] == "shown"
    unknown_prompt = seen["get never_was"]
    assert "never_was" in unknown_prompt
    for name in ("fetch", "debug_dump"):       # named like a hidden tool; excluded
        assert seen[f"get {name}"] == unknown_prompt.replace("never_was", name)
    unknown_resource = seen["read nothing://here"]
    assert "nothing://here" in unknown_resource
    for uri in ("secret://key", "data://fetch", "notes://private1", "secret://other"):
        assert seen[f"read {uri}"] == unknown_resource.replace("nothing://here", uri), uri


def test_a_server_whose_tools_are_all_hidden_shows_no_prompt_or_resource(impl):
    rules = impl.compile(exclude=["demo/*"])     # a ToolFilter: the same rules
    seen = asyncio.run(extras_seen(extras_server(rules)))
    assert seen["prompts"] == seen["resources"] == seen["templates"] == []
    assert seen["get summary"] == seen["get never_was"].replace("never_was", "summary")
    assert seen["read docs://readme"] == \
        seen["read nothing://here"].replace("nothing://here", "docs://readme")


def test_a_tool_filter_hides_the_prompts_and_resources_named_like_its_hidden_tools(impl):
    seen = asyncio.run(extras_seen(extras_server(impl.compile(exclude=["*/fetch"]))))
    assert seen["prompts"] == ["debug_dump", "summary"]
    assert seen["resources"] == ["docs://readme", "secret://key"]
    assert seen["get fetch"] == seen["get never_was"].replace("never_was", "fetch")
