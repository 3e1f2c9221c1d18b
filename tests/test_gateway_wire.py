"""A tools listing given again is written from the JSON text kept with its
answer (``gateway/listing_cache.py``): the bytes are those of the first,
uncached answer, for every caller, request id and page; a filtered listing,
a change notice and a reload are answered anew.

In-process: :class:`WireResponse` against the MCP SDK's own dump, and which
responses the cache's write stream rewrites. Then real processes: the
gateway over stdio read line by line by the raw client (``_raw_mcp.py``),
and over streamable HTTP by plain POSTs, with ``_gateway_raw_upstream.py``
upstreams.
"""

from __future__ import annotations

import asyncio
import json

import pytest

fastmcp = pytest.importorskip("fastmcp", reason="needs the gateway extra")

from _gateway import DEADLINE, change_tools, raw_http, raw_setup, serve_http  # noqa: E402
from mcp.shared.message import SessionMessage  # noqa: E402
from mcp_types import ErrorData, JSONRPCError, JSONRPCResponse  # noqa: E402
from test_gateway_cache import reload_by_sighup, rewrite, spec_of  # noqa: E402
from test_gateway_hardening import READ, tool  # noqa: E402
from test_gateway_surface import gateway, names_of  # noqa: E402

from toolfilter_fast.gateway.listing_cache import ANSWERS, ListingCache, WireResponse  # noqa: E402

TOOLS = [{"name": "s__read_a", "description": "reads \u00e9t\u00e9 \u2014 \U0001F600 \"quoted\"\n",
          "inputSchema": {"type": "object", "properties": {"n": {"type": "number",
                                                               "maximum": 1.5e300}}},
          "annotations": {"readOnlyHint": True}, "_meta": {"fastmcp": {"tags": []}}},
         {"name": "s__read_b", "inputSchema": {"type": "object"}, "title": None,
          "outputSchema": {"type": "object", "properties": {"big": {"const": 2**70}}}}]


def sdk_dump(request_id, result, **kwargs):
    """The line the SDK's transports write for this response."""
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result).model_dump_json(**kwargs)


def kept_cache(results):
    """A listing cache holding ``results`` as its answers (keys
    ``("2025-06-18", None, k)`` for k = 0, 1, ...)."""
    cache = ListingCache(server=None, provider=None)
    for k, result in enumerate(results):
        cache._keep(key(k), "catalog", result)
    return cache


def key(k):
    return ("2025-06-18", None, k)


def written(cache, request_id, result):
    """What the cache's write stream sends for the response ``result``."""
    sent = []

    class Sink:
        async def send(self, item):
            sent.append(item)

    message = JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)
    asyncio.run(cache.wire(Sink()).send(SessionMessage(message, metadata="m")))
    assert sent[0].metadata == "m"
    return sent[0].message


@pytest.mark.parametrize("request_id", [1, 0, 2**53, "a", "\u00e9-\"id\"", ""])
@pytest.mark.parametrize("more", [{}, {"nextCursor": "abc=="}, {"_meta": {"k": [1, None]}},
                                  {"nextCursor": None, "ttlMs": 5}])
def test_a_wire_response_dumps_the_bytes_of_the_sdks_dump(request_id, more):
    result = {"tools": TOOLS, **more}
    cache = kept_cache([result])
    answer = cache._kept[key(0)]
    message = written(cache, request_id, dict(answer))
    assert type(message) is WireResponse
    assert message.id == request_id and message.result["tools"] is answer["tools"]
    for kwargs in ({"by_alias": True, "exclude_unset": True}, {}, {"by_alias": False}):
        assert message.model_dump_json(**kwargs) == sdk_dump(request_id, answer, **kwargs)
    # Any other argument: the full dump, as the SDK makes it.
    for kwargs in ({"indent": 2}, {"ensure_ascii": True}, {"exclude_none": True}):
        assert message.model_dump_json(by_alias=True, **kwargs) == sdk_dump(
            request_id, answer, by_alias=True, **kwargs)
    assert "toolfilter-wire" not in message.model_dump_json(by_alias=True, exclude_unset=True)


def test_only_the_tools_of_an_answer_kept_are_written_from_their_text():
    cache = kept_cache([{"tools": TOOLS}])
    kept = cache._kept[key(0)]["tools"]
    # The same tools in another list (a filtered listing, a new answer): untouched.
    assert type(written(cache, 1, {"tools": list(kept)})) is JSONRPCResponse
    assert type(written(cache, 1, {"tools": kept})) is WireResponse
    assert type(written(cache, 1, {"content": kept})) is JSONRPCResponse
    error = SessionMessage(JSONRPCError(jsonrpc="2.0", id=1, error=ErrorData(code=1, message="x")))
    assert cache.wired(error) is error
    # Past the last ANSWERS answers, the first is no longer written from its text.
    for k in range(1, ANSWERS + 1):
        cache._keep(key(k), "catalog", {"tools": [dict(TOOLS[0], name=f"t{k}")]})
    assert key(0) not in cache._kept
    assert type(written(cache, 1, {"tools": kept})) is JSONRPCResponse
    newest = cache._kept[key(ANSWERS)]["tools"]
    assert type(written(cache, 1, {"tools": newest})) is WireResponse
    # An answer kept again under its key (two first listings at once): the old one's text goes.
    cache._keep(key(ANSWERS), "catalog", {"tools": [TOOLS[1]]})
    assert type(written(cache, 1, {"tools": newest})) is JSONRPCResponse
    # Tools that are no JSON (a lone surrogate) are left to the SDK's own dump.
    cache._keep(key(0), "catalog", {"tools": [dict(TOOLS[1], description="\ud800")]})
    assert type(written(cache, 1, {"tools": cache._kept[key(0)]["tools"]})) is JSONRPCResponse


# --- over stdio ------------------------------------------------------------------------

GROUPS_POLICY = """\
[filter]
exclude = ["*/delete_*"]

[[tool_filter_groups]]
mode = "always"
tools = ["raw__read_*"]

[[tool_filter_groups]]
mode = "dynamic"
tools = ["raw__git_*"]
keywords = ["git"]
"""
GROUP_TOOLS = [tool("read_a", READ, "reads a \u00e9"), tool("read_b", READ, "reads b"),
               tool("git_log", READ, "git log"), tool("git_diff", READ, "git diff"),
               tool("git_show", READ), tool("delete_x", READ)]


def listing(client, request_id, message=None, cursor=None, filter=None):
    params = {}
    if message is not None:
        params["_meta"] = {"message": message}
    if cursor is not None:
        params["cursor"] = cursor
    if filter is not None:
        params["filter"] = filter
    line = client.exchange({"jsonrpc": "2.0", "id": request_id, "method": "tools/list",
                            "params": params})
    return line, json.loads(line)


def without_id(line, request_id):
    marked = json.dumps(request_id, ensure_ascii=False).encode()
    assert line.count(b'"id":' + marked) == 1
    return line.replace(b'"id":' + marked, b'"id":ID', 1)


def pages(client, ids, message):
    """Every page of one caller's listing (by ``nextCursor``), each page asked
    for with each id of ``ids`` in turn: the lines (id taken out) by page."""
    out = []
    cursor = None
    while True:
        lines = []
        for request_id in ids:
            line, answer = listing(client, request_id, message, cursor)
            lines.append(without_id(line, request_id))
        out.append(lines)
        cursor = answer["result"].get("nextCursor")
        if cursor is None:
            return out


def test_stdio_answers_given_again_are_the_bytes_of_the_first(tmp_path):
    paths = raw_setup(tmp_path, {"raw": spec_of(tmp_path, "raw", GROUP_TOOLS)}, GROUPS_POLICY)
    with gateway(paths, tmp_path, "--message-from", "meta:message", "--page-size", "2",
                 "--list-ttl", "3600") as client:
        client.initialize()
        ids = [7, "seven", 2**40, "\u00e9"]
        callers = {}
        for _ in range(2):  # the two callers in turn, twice
            for message in ("show the git log", None):
                callers.setdefault(message, []).extend(pages(client, ids, message))
        _, filtered = listing(client, 99, "show the git log", filter={"namePatterns":
                                                                      ["raw__git_l*"]})
        _, again = listing(client, 100, "show the git log")
    git, plain = callers["show the git log"], callers[None]
    assert len(git) == 2 * 3 and len(plain) == 2 * 1  # five tools shown, two a page; two
    for found in (git, plain):
        half = len(found) // 2
        for page, repeat in zip(found[:half], found[half:], strict=True):
            assert page + repeat == [page[0]] * (2 * len(ids))
    shown = [name for page in git[:3] for name in names_of(json.loads(
        page[0].replace(b'"id":ID', b'"id":0'))["result"])]
    assert shown == ["raw__git_diff", "raw__git_log", "raw__git_show", "raw__read_a",
                     "raw__read_b"]
    assert names_of(json.loads(plain[0][0].replace(b'"id":ID', b'"id":0'))["result"]) == \
        ["raw__read_a", "raw__read_b"]
    assert "reads a \u00e9" in plain[0][0].decode()
    # A filter narrows an answer kept, and the next unfiltered one is whole again.
    assert names_of(filtered["result"]) == ["raw__git_log"]
    assert again["result"] == json.loads(git[0][0].replace(b'"id":ID', b'"id":100'))["result"]


fcntl = pytest.importorskip("fcntl", reason="pipes sized by fcntl (POSIX)")
needs_pipe_sizes = pytest.mark.skipif(not hasattr(fcntl, "F_SETPIPE_SZ"),
                                      reason="the pipe's size is set on Linux only")


@needs_pipe_sizes
def test_the_pipe_answered_on_is_grown_and_anything_else_left_alone(tmp_path):
    import os

    from toolfilter_fast.gateway.serve import PIPE_SIZE, _grow_pipe

    read, write = os.pipe()
    try:
        with os.fdopen(write, "wb", closefd=False) as stream:
            _grow_pipe(stream)
        assert fcntl.fcntl(read, fcntl.F_GETPIPE_SZ) == PIPE_SIZE
    finally:
        os.close(read)
        os.close(write)
    with (tmp_path / "file").open("wb") as stream:
        _grow_pipe(stream)  # no pipe: nothing to do, no error
    _grow_pipe(object())  # no file at all: the same
    # Over stdio, the gateway's answers come on a pipe of that size.
    paths = raw_setup(tmp_path, {"raw": spec_of(tmp_path, "raw", [tool("read_a", READ)])},
                      GROUPS_POLICY)
    with gateway(paths, tmp_path) as client:
        client.initialize()
        assert fcntl.fcntl(client.process.stdout.fileno(), fcntl.F_GETPIPE_SZ) == PIPE_SIZE


def shown(line):
    """The tools (name, description) of an answer's line, its id taken out."""
    return [(t["name"], t.get("description")) for t in json.loads(
        line.replace(b'"id":ID', b'"id":0'))["result"]["tools"]]


def test_a_change_notice_is_written_anew(tmp_path):
    paths = raw_setup(tmp_path, {"raw": spec_of(tmp_path, "raw", [tool("read_a", READ)])},
                      GROUPS_POLICY)
    with gateway(paths, tmp_path, "--list-ttl", "3600") as client:
        client.initialize()
        before = [without_id(listing(client, i)[0], i) for i in (1, 2, 3)]
        change_tools(tmp_path, "raw", [tool("read_a", READ, "changed"), tool("read_c", READ)],
                     tmp_path / "serve.log")
        changed = [without_id(listing(client, i)[0], i) for i in (4, 5, 6)]
    assert before == [before[0]] * 3 and changed == [changed[0]] * 3
    assert shown(before[0]) == [("raw__read_a", None)]
    assert shown(changed[0]) == [("raw__read_a", "changed"), ("raw__read_c", None)]


def test_a_reload_is_written_anew(tmp_path):
    # A silent upstream: its list changes with no notice, so only the reload shows it.
    silent = spec_of(tmp_path, "raw", [tool("read_a", READ)], silent=True)
    with gateway(raw_setup(tmp_path, {"raw": silent}, GROUPS_POLICY), tmp_path,
                 "--list-ttl", "3600") as client:
        client.initialize()
        before = [without_id(listing(client, i)[0], i) for i in (1, 2)]
        rewrite(tmp_path, "raw", [tool("read_d", READ)])
        held = [without_id(listing(client, i)[0], i) for i in (3, 4)]
        reload_by_sighup(client, tmp_path / "serve.log")
        reloaded = [without_id(listing(client, i)[0], i) for i in (5, 6)]
    assert before == held == [before[0]] * 2
    assert shown(before[0]) == [("raw__read_a", None)]
    assert reloaded == [reloaded[0]] * 2
    assert shown(reloaded[0]) == [("raw__read_d", None)]


# --- over streamable HTTP ----------------------------------------------------------------

CTX_POLICY = """\
[filter]
include = ["*/read_*", {cel = 'ctx != null && "admin" in ctx.scopes'}]
exclude = ["*/delete_*"]
"""


async def _http_listings(url, token, ids):
    """Every page of the tools listing, each asked for with each of ``ids``, over
    one streamable-HTTP session: the results by page."""
    import httpx

    async with httpx.AsyncClient(timeout=DEADLINE) as http:
        send = raw_http(http, url, token)

        async def post(message):
            answer = await send(message)
            assert answer["id"] == message["id"]
            return answer["result"]

        await post({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        out, cursor = [], None
        while True:
            params = {} if cursor is None else {"cursor": cursor}
            out.append([await post({"jsonrpc": "2.0", "id": i, "method": "tools/list",
                                    "params": params}) for i in ids])
            cursor = out[-1][0].get("nextCursor")
            if cursor is None:
                return out


def test_http_answers_given_again_are_the_first_for_each_token(tmp_path):
    raw_setup(tmp_path, {"raw": spec_of(tmp_path, "raw", [
        tool("read_a", READ, "\u00e9"), tool("read_b", READ), tool("admin_reset", READ),
        tool("delete_x", READ)])}, CTX_POLICY)
    served = serve_http(tmp_path, "--list-ttl", "3600", "--page-size", "2")
    try:
        async def main():
            rounds = []
            for token in ("token-alice", "token-bob", "token-alice"):
                rounds.append(await _http_listings(served.url, token, [1, "two", 3]))
            return rounds

        alice, bob, alice_again = asyncio.run(main())
    finally:
        assert served.stop() == 0
    for found in (alice, bob, alice_again):
        assert all(page == [page[0]] * 3 for page in found)
    assert alice_again == alice

    def shown(found):
        return [name for page in found for name in names_of(page[0])]

    assert shown(alice) == ["raw__admin_reset", "raw__read_a", "raw__read_b"]
    assert shown(bob) == ["raw__read_a", "raw__read_b"]
