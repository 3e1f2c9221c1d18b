"""The list filter (``toolfilter_fast.list_filter``) on its own: parsing
``params.filter`` in the proposal's order, matching, cursors and the
capability, and the SDK middleware over wire-form results. The gateway and
the MCP server adapter run it against real processes in
``test_gateway_surface.py`` and ``test_adapters_mcp_server.py``."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from toolfilter_fast.list_filter import (
    MAX_PATTERN_LENGTH,
    MAX_PATTERNS,
    ListFilter,
    ListFilterError,
    ListFilterMiddleware,
    advertise,
)


def parse(method, filter_):
    return ListFilter.parse(method, {"filter": filter_})


def test_known_fields_only_and_empty_ones_left_out():
    assert not ListFilter.parse("tools/list", None)
    assert not ListFilter.parse("tools/list", {})
    assert not parse("tools/list", {})
    assert not parse("tools/list", {"namePatterns": []})
    assert not parse("tools/list", {"uriPatterns": ["x"], "com.example/x": {"deep": [1]}})
    assert parse("resources/list", {"uriPatterns": ["b", "a", "b"], "namePatterns": []}).fields \
        == (("uriPatterns", ("a", "b")),)
    with pytest.raises(ValueError, match="not a list method"):
        ListFilter.parse("tools/call", {})


def test_every_pattern_is_checked_before_the_counts():
    # 101 patterns, one of them too long: the pattern is named first.
    patterns = ["p"] * (MAX_PATTERNS + 1) + ["x" * (MAX_PATTERN_LENGTH + 1)]
    with pytest.raises(ListFilterError, match=r"^Invalid pattern in namePatterns: 'x{80}\.\.\.'"):
        parse("tools/list", {"namePatterns": patterns})
    with pytest.raises(ListFilterError, match="lone surrogate"):
        parse("tools/list", {"namePatterns": ["a\ud800"]})
    with pytest.raises(ListFilterError) as error:
        parse("prompts/list", {"namePatterns": ["p"] * 101})
    assert (error.value.code, error.value.message) == (
        -32602, "Too many patterns: 101 exceeds maximum of 100")
    assert parse("tools/list", {"namePatterns": ["é" * MAX_PATTERN_LENGTH]})  # characters


def test_a_quoted_pattern_stays_one_printable_line():
    with pytest.raises(ListFilterError) as raised:
        parse("tools/list", {"namePatterns": ["\n\x00" * 200]})
    assert "\n" not in raised.value.message and "\\n\\u0000" in raised.value.message


def test_narrowing_and_across_fields_or_within():
    items = [{"name": "readme", "uri": "file:///a/README"}, {"name": "main", "uri": "file:///a/m"},
             {"name": "readme", "uri": "note://x"}, {"uri": "file:///no-name"},
             {"name": 7, "uri": "file:///7"}, "not an item"]
    both = parse("resources/list", {"namePatterns": ["read*", "mai?"],
                                    "uriPatterns": ["file:///*"]})
    assert both.narrow(items) == items[:2]
    assert parse("resources/list", {"uriPatterns": ["*"]}).narrow(items) == items[:5]


def test_a_cursor_round_trips_and_is_bound():
    first = parse("tools/list", {"namePatterns": ["a*", "b"]})
    cursor = first.wrap({"o": 4})
    assert parse("tools/list", {"namePatterns": ["b", "a*", "b"]}).unwrap(cursor) == {"o": 4}
    for other, message in ((parse("tools/list", {"namePatterns": ["a*"]}), "must not change"),
                           (ListFilter("tools/list"), "must not change"),
                           (parse("prompts/list", {"namePatterns": ["a*", "b"]}),
                            "given for tools/list, not prompts/list")):
        with pytest.raises(ListFilterError, match=message):
            other.unwrap(cursor)
    for forged in ("", "!!", "e30", 17, None, cursor[:-2]):
        with pytest.raises(ListFilterError, match="Invalid cursor"):
            first.unwrap(forged)


def test_filtering_is_advertised_under_the_capabilities_the_server_has():
    assert advertise({"tools": {"listChanged": True}, "logging": {}}) == {
        "tools": {"listChanged": True, "filtering": {"supported": ["namePatterns"]}},
        "logging": {}}
    assert advertise({"resources": {}})["resources"]["filtering"] == {
        "supported": ["namePatterns", "uriPatterns"]}
    assert advertise({}) == {} and advertise(None) is None


@dataclass
class Ctx:
    method: str
    params: Any = None


class Model:
    """A result model, as an SDK layer may return one."""

    def __init__(self, wire):
        self.wire = wire

    def model_dump(self, **options):
        assert options == {"by_alias": True, "mode": "json", "exclude_none": True}
        return dict(self.wire)


def run(middleware, ctx, answer):
    seen = []

    async def call_next(inner):
        seen.append(inner)
        return answer(inner)

    return asyncio.run(middleware(ctx, call_next)), seen


def test_the_middleware_filters_a_page_and_wraps_its_cursor():
    tools = [{"name": "git_log"}, {"name": "search"}]
    result, seen = run(ListFilterMiddleware(), Ctx("tools/list", {
        "filter": {"namePatterns": ["git_*"]}, "_meta": {"k": 1}}),
        lambda ctx: Model({"tools": tools, "nextCursor": "inner-1"}))
    assert result["tools"] == [{"name": "git_log"}]
    assert seen[0].params == {"_meta": {"k": 1}}  # the filter stays here
    again, seen = run(ListFilterMiddleware(), Ctx("tools/list", {
        "filter": {"namePatterns": ["git_*"]}, "cursor": result["nextCursor"]}),
        lambda ctx: {"tools": []})
    assert seen[0].params == {"cursor": "inner-1"} and again == {"tools": []}


def test_the_middleware_advertises_and_passes_other_requests():
    init, _ = run(ListFilterMiddleware(), Ctx("initialize"),
                  lambda ctx: Model({"capabilities": {"tools": {}}, "protocolVersion": "x"}))
    assert init == {"capabilities": {"tools": {"filtering": {"supported": ["namePatterns"]}}},
                    "protocolVersion": "x"}
    discover, _ = run(ListFilterMiddleware(), Ctx("server/discover"),
                      lambda ctx: {"capabilities": {"prompts": {}}, "supportedVersions": []})
    assert discover["capabilities"] == {"prompts": {"filtering": {"supported": [
        "namePatterns"]}}}
    untouched = object()
    call, seen = run(ListFilterMiddleware(), Ctx("tools/call", {"name": "x", "filter": 1}),
                     lambda ctx: untouched)
    assert call is untouched and seen[0].params == {"name": "x", "filter": 1}


def test_the_middleware_refuses_with_the_sdks_invalid_params():
    from mcp.shared.exceptions import MCPError

    with pytest.raises(MCPError) as raised:
        run(ListFilterMiddleware(), Ctx("tools/list", {"filter": {"namePatterns": "x"}}),
            lambda ctx: pytest.fail("the request went on"))
    assert raised.value.error.code == -32602
