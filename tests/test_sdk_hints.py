"""Tool hints read as the server sent them, wherever toolfilter_fast reads tools
through the MCP SDK's client: the SDK's ``ClientSession`` (either generation, CI
runs this file in both venvs), the gateway's upstreams and ``toolfilter fetch``.

The upstream is ``_raw_hints_server.py``, a real stdio process that writes its
JSON-RPC by hand, so that it can send hints the SDK's own servers could not
(``"false"``, ``1``). The framework adapters' own tests use it too.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import Annotations, Tool
from toolfilter_fast._tool import HINTS
from toolfilter_fast.sdk_hints import (
    hints_as_sent,
    loose_hints,
    strict_annotations,
    strict_listing,
)

mcp = pytest.importorskip("mcp", reason="needs the MCP SDK")

from _raw_hints_server import COERCED, HONEST, SCRIPT, TOOLS, definition  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

RAW_SERVER = StdioServerParameters(command=sys.executable, args=[SCRIPT, "raw"])

#: The rules of these tests: no destructive tool, by its effective hints.
NO_DESTRUCTIVE = toolfilter_fast.compile(exclude=[Annotations(destructiveHint=True)])


def as_sent(server_id="raw"):
    """The server's tools as the library reads its JSON: a Tool from each definition."""
    return [Tool.from_mcp(server_id, definition(name, hints)) for name, hints in TOOLS]


def kept_as_sent(rules=NO_DESTRUCTIVE, server_id="raw"):
    """The names ``rules`` keep of the server's tools, read as sent."""
    return [tool.name for tool in rules.filter(as_sent(server_id), None)]


def test_the_library_and_the_sdk_disagree_on_the_raw_server():
    # What the fixes below are for: the SDK's models make booleans of these hints.
    from mcp.types import ToolAnnotations

    assert kept_as_sent() == ["read_file"]
    for name in COERCED:
        annotations = dict(TOOLS)[name]
        coerced = Tool("raw", name, annotations=ToolAnnotations.model_validate(annotations)
                       .model_dump(by_alias=True, exclude_none=True))
        assert NO_DESTRUCTIVE.visible(coerced, None), name


# --- the functions ----------------------------------------------------------------------


def test_loose_hints_are_the_hints_that_are_no_json_boolean():
    assert loose_hints({"destructiveHint": "false", "readOnlyHint": 1, "idempotentHint": True,
                        "openWorldHint": None, "title": 3}) == ["readOnlyHint", "destructiveHint"]
    assert loose_hints(None) == [] and loose_hints("readOnlyHint") == []
    assert strict_annotations({"title": "T", "readOnlyHint": 0.0, "destructiveHint": False}) == {
        "title": "T", "destructiveHint": False}
    honest = {"readOnlyHint": True}
    assert strict_annotations(honest) is honest


class Truthy(str):
    """A str subclass that says it is true: still no boolean."""

    def __bool__(self):
        return True

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


hint_values = st.one_of(
    st.booleans(), st.none(), st.integers(-2, 2), st.floats(allow_nan=True),
    st.sampled_from(["true", "false", "1", "0", "yes", "", "\ud800", "İ", "K"]),
    st.builds(Truthy, st.sampled_from(["true", "false"])), st.lists(st.booleans(), max_size=2),
)


@given(st.dictionaries(st.sampled_from([*HINTS, "title", "x-other"]), hint_values, max_size=6))
def test_strict_annotations_keep_exactly_what_the_library_believes(annotations):
    strict = strict_annotations(annotations)
    # The library reads the same hints from both: only real booleans count.
    assert Tool("s", "t", annotations=strict)._hints == Tool("s", "t", annotations=annotations)._hints
    # Every hint left is a boolean or null, every other key is kept as it was.
    assert all(strict[key] is None or isinstance(strict[key], bool)
               for key in HINTS if key in strict)
    assert {key: value for key, value in annotations.items() if key not in HINTS} == \
        {key: value for key, value in strict.items() if key not in HINTS}
    assert [key for key in annotations if key in strict] == list(strict)


def test_strict_listing_changes_only_the_loose_hints():
    listing = {"tools": [definition(name, hints) for name, hints in TOOLS], "nextCursor": "c"}
    strict = strict_listing(listing)
    assert strict["nextCursor"] == "c" and listing["tools"][1]["annotations"] == {
        "destructiveHint": "false"}                                   # the input is not changed
    assert [tool["annotations"] for tool in strict["tools"]] == [
        {"readOnlyHint": True, "destructiveHint": False}, {}, {}, {"destructiveHint": True},
        {"title": "Close"}]
    assert strict["tools"][0] is listing["tools"][0]
    honest = {"tools": [definition("read_file", {"readOnlyHint": True})]}
    assert strict_listing(honest) is honest
    for odd in (None, [], {"tools": "x"}, {"tools": [1, None]}):
        assert strict_listing(odd) is odd or strict_listing(odd) == odd


# --- the SDK's client ---------------------------------------------------------------------


async def listed(session, inside):
    if inside:
        with hints_as_sent():
            return (await session.list_tools()).tools
    return (await session.list_tools()).tools


def annotations_of(tool):
    return None if tool.annotations is None else tool.annotations.model_dump(
        by_alias=True, exclude_none=True)


def test_a_session_lists_hints_as_sent_inside_the_block_and_the_sdks_outside():
    async def run():
        async with stdio_client(RAW_SERVER) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await listed(session, True), await listed(session, False)

    strict, coerced = asyncio.run(run())
    assert [tool.name for tool in strict] == [name for name, _ in TOOLS]
    assert [annotations_of(tool) for tool in strict] == [
        strict_annotations(hints) for _, hints in TOOLS]
    server_tools = [Tool.from_mcp("raw", tool) for tool in strict]
    assert [tool.name for tool in NO_DESTRUCTIVE.filter(server_tools, None)] == kept_as_sent()
    # Outside the block the SDK's reading is left alone.
    assert annotations_of(coerced[1]) == {"destructiveHint": False}


def test_the_block_holds_in_the_tasks_it_starts_and_ends_with_it():
    async def run():
        async with stdio_client(RAW_SERVER) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            with hints_as_sent():
                with hints_as_sent():                     # blocks nest
                    pass
                task = asyncio.ensure_future(session.list_tools())
                inner = (await task).tools
            after = (await session.list_tools()).tools
            return inner, after

    inner, after = asyncio.run(run())
    assert annotations_of(inner[1]) == {}
    assert annotations_of(after[1]) == {"destructiveHint": False}


# --- the gateway and fetch --------------------------------------------------------------


gateway = pytest.mark.skipif(
    not __import__("importlib").util.find_spec("fastmcp"), reason="needs the gateway extra")

DESTRUCTIVE_POLICY = '[filter]\nexclude = [{annotations = {destructiveHint = true}}]\n'


def raw_setup(directory, policy=DESTRUCTIVE_POLICY):
    servers = {"raw": {"command": sys.executable, "args": [SCRIPT, "raw"]}}
    (directory / "servers.json").write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    (directory / "policy.toml").write_text(policy, encoding="utf-8")
    return directory / "servers.json", directory / "policy.toml"


async def through_the_gateway(servers, policy, log):
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    transport = StdioTransport(
        sys.executable, ["-m", "toolfilter_fast", "serve", "--config", str(policy),
                         "--servers", str(servers)],
        # The whole environment: the SDK passes a child only a few variables by default,
        # and PYTHONPATH says which toolfilter_fast runs.
        env=dict(os.environ), keep_alive=False, log_file=log)
    async with Client(transport, timeout=90, init_timeout=90) as client:
        tools = await client.list_tools()
        answers = {}
        for name in ("raw__merge_pr", "raw__never_was", "raw__read_file"):
            result = await client.call_tool_mcp(name, {"path": "p"})
            answers[name] = (result.is_error, result.content[0].text)
        return tools, answers


@gateway
def test_the_gateway_judges_its_upstreams_hints_as_sent(tmp_path):
    servers, policy = raw_setup(tmp_path)
    tools, answers = asyncio.run(through_the_gateway(servers, policy, tmp_path / "serve.log"))
    assert [tool.name for tool in tools] == [f"raw__{name}" for name in kept_as_sent()]
    assert answers["raw__read_file"] == (False, "ran read_file")
    assert answers["raw__merge_pr"] == (answers["raw__never_was"][0],
                                        answers["raw__never_was"][1].replace("never_was",
                                                                             "merge_pr"))


@gateway
def test_the_gateway_relays_no_hint_it_did_not_believe(tmp_path):
    servers, policy = raw_setup(tmp_path, "[filter]\n")
    tools, _ = asyncio.run(through_the_gateway(servers, policy, tmp_path / "serve.log"))
    relayed = {tool.name: annotations_of(tool) or {} for tool in tools}
    assert relayed == {f"raw__{name}": strict_annotations(hints) for name, hints in TOOLS}


@gateway
def test_fetch_writes_the_hints_as_sent(tmp_path):
    from _gateway import toolfilter

    from toolfilter_fast.cli.catalog_files import read_catalog

    servers, _ = raw_setup(tmp_path)
    result = toolfilter("fetch", "--servers", str(servers), "-o", str(tmp_path / "catalogs"))
    assert result.returncode == 0, result.stderr
    path = tmp_path / "catalogs" / "raw.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert [tool["annotations"] for tool in doc["tools"]] == [
        strict_annotations(hints) for _, hints in TOOLS]
    fetched = read_catalog(str(path))
    assert [tool.name for tool in NO_DESTRUCTIVE.filter(fetched, None)] == kept_as_sent()
    assert [tool._hints for tool in fetched] == [tool._hints for tool in as_sent()]


def test_the_honest_tools_keep_every_hint():
    # The raw server's honest tools are the control: their hints are believed everywhere.
    assert set(HONEST) <= {name for name, _ in TOOLS}
    for name in HONEST:
        assert strict_annotations(dict(TOOLS)[name]) == dict(TOOLS)[name]
