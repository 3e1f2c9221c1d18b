"""The pydantic-ai adapter, against the installed ``pydantic-ai-slim``.

Agents run on pydantic-ai's own ``TestModel``/``FunctionModel`` (no LLM API):
the tests read the tool definitions the model was offered, and which tool
functions really ran. The MCP tests use pydantic-ai's ``MCPToolset`` over the
demo FastMCP server in-process.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

import toolfilter_fast

pydantic_ai = pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")

from _mcp_demo_server import TOOL_NAMES, build_server  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402

from toolfilter_fast.adapters.pydantic_ai import (  # noqa: E402
    FilterFunc,
    PrepareFunc,
    filter_func,
    prepare_func,
)


@dataclass
class User:
    name: str
    admin: bool = False


def is_admin(tool, user):
    return user is not None and user.admin


def demo_toolset(ran):
    """Four function tools that record their own runs in ``ran``."""

    def read_file(path: str) -> str:
        """Reads a file."""
        ran.append("read_file")
        return "text"

    def write_file(path: str) -> str:
        """Writes a file."""
        ran.append("write_file")
        return "ok"

    def delete_repo(repo: str) -> str:
        """Deletes a repository."""
        ran.append("delete_repo")
        return "deleted"

    def admin_reset() -> str:
        """Resets everything."""
        ran.append("admin_reset")
        return "reset"

    return FunctionToolset([read_file, write_file, delete_repo, admin_reset])


def offered(model):
    return [tool.name for tool in model.last_model_request_parameters.function_tools]


def run(toolset, user, model=None):
    model = model or TestModel()
    agent = Agent(model, deps_type=User, toolsets=[toolset])
    result = agent.run_sync("go", deps=user)
    return model, result


RULES = {"exclude": ["*/delete_*"], "include": ["demo/read_*", "demo/write_*", is_admin]}


def test_filtered_offers_and_runs_only_visible_tools(impl):
    ran = []
    toolset = demo_toolset(ran).filtered(filter_func(impl.compile(**RULES), server_id="demo"))
    model, _ = run(toolset, User("bob"))
    assert offered(model) == ["read_file", "write_file"]
    assert sorted(ran) == ["read_file", "write_file"]  # TestModel calls every offered tool

    ran.clear()
    model, _ = run(toolset, User("root", admin=True))
    assert offered(model) == ["read_file", "write_file", "admin_reset"]
    assert sorted(ran) == ["admin_reset", "read_file", "write_file"]


def test_server_id_is_what_patterns_see(impl):
    ran = []
    toolset = demo_toolset(ran).filtered(
        filter_func(impl.compile(include=["demo/read_file"]), server_id="other"),
    )
    model, _ = run(toolset, User("bob"))
    assert offered(model) == []


def test_ctx_function_receives_the_run_context(impl):
    seen = []

    def ctx(run_context):
        seen.append(run_context.prompt)
        return User("from-prompt", admin=run_context.prompt == "go")

    toolset = demo_toolset([]).filtered(
        filter_func(impl.compile(include=[is_admin]), server_id="demo", ctx=ctx),
    )
    model, _ = run(toolset, None)
    assert offered(model) == list(TOOL_NAMES)
    assert seen and set(seen) == {"go"}


def answer_to_a_call_of(name, impl):
    """What pydantic-ai tells a model that calls ``name``, and which tools ran."""
    ran = []
    offered_first = []

    def respond(messages, info: AgentInfo):
        if not offered_first:
            offered_first.append([tool.name for tool in info.function_tools])
            return ModelResponse(parts=[ToolCallPart(name, {"repo": "x"})])
        return ModelResponse(parts=[TextPart("done")])

    toolset = demo_toolset(ran).filtered(filter_func(impl.compile(**RULES), server_id="demo"))
    _, result = run(toolset, User("root", admin=True), FunctionModel(respond))
    assert result.output == "done"
    answers = [
        part for message in result.all_messages() for part in getattr(message, "parts", [])
        if getattr(part, "tool_name", None) == name and part.part_kind != "tool-call"
    ]
    assert len(answers) == 1
    answer = answers[0]
    return (
        type(answer), answer.content.replace(repr(name), "NAME"), answer.outcome,
        answer.retry.cause, ran, offered_first[0],
    )


def test_a_hidden_tool_named_by_the_model_is_answered_as_unknown_and_never_runs(impl):
    hidden = answer_to_a_call_of("delete_repo", impl)
    missing = answer_to_a_call_of("never_existed", impl)
    assert hidden == missing
    _, content, outcome, cause, ran, offered_tools = hidden
    assert content.startswith("Unknown tool name: NAME")
    assert (outcome, cause, ran) == ("retried", "unknown_tool", [])
    assert "delete_repo" not in offered_tools


class CountingFilter:
    """A ToolFilter wrapper that counts how it is called."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []

    def visible(self, tool, ctx=None):
        self.calls.append("visible")
        return self.inner.visible(tool, ctx)

    def static_visible(self, tool):
        self.calls.append("static_visible")
        return self.inner.static_visible(tool)

    def filter(self, tools, ctx=None):
        self.calls.append(("filter", len(tools)))
        return self.inner.filter(tools, ctx)


def test_prepared_filters_the_whole_list_in_one_call(impl):
    counting = CountingFilter(impl.compile(**RULES))
    toolset = demo_toolset([]).prepared(prepare_func(counting, server_id="demo"))
    model, _ = run(toolset, User("root", admin=True))
    assert offered(model) == ["read_file", "write_file", "admin_reset"]
    assert counting.calls and set(counting.calls) == {("filter", 4)}


@pytest.mark.parametrize("max_tools, expected", [
    (None, ["read_file", "write_file", "admin_reset"]),
    (2, ["read_file", "write_file"]),
    (1, ["read_file"]),
    (0, []),
])
def test_prepared_cuts_to_max_tools_after_filtering(impl, max_tools, expected):
    toolset = demo_toolset([]).prepared(
        prepare_func(impl.compile(**RULES), server_id="demo", max_tools=max_tools),
    )
    model, _ = run(toolset, User("root", admin=True))
    assert offered(model) == expected


def test_prepare_func_returns_the_same_definitions():
    from pydantic_ai import RunContext
    from pydantic_ai.usage import RunUsage

    context = RunContext(deps=User("bob"), model=TestModel(), usage=RunUsage())
    tools = asyncio.run(demo_toolset([]).get_tools(context))
    definitions = [tool.tool_def for tool in tools.values()]
    prepare = prepare_func(toolfilter_fast.compile(exclude=["*/delete_repo"]), server_id="demo")
    kept = prepare(context, definitions)
    assert [definition.name for definition in kept] == ["read_file", "write_file", "admin_reset"]
    assert [definition for definition in definitions if definition.name != "delete_repo"] == kept
    assert all(any(k is d for d in definitions) for k in kept)


def test_mcp_toolset_annotations_reach_function_patterns(impl):
    def destructive(tool, user):
        return (tool.annotations or {}).get("destructiveHint") is True

    def read_only(tool, user):
        return (tool.annotations or {}).get("readOnlyHint") is True

    from pydantic_ai.mcp import MCPToolset

    rules = impl.compile(exclude=[destructive], include=[read_only, is_admin])
    toolset = MCPToolset(build_server()).filtered(filter_func(rules, server_id="demo"))
    model, result = run(toolset, User("bob"))
    assert offered(model) == ["read_file"]
    assert "read_file" in result.output

    prepared = MCPToolset(build_server()).prepared(prepare_func(rules, server_id="demo"))
    model, _ = run(prepared, User("root", admin=True))
    assert offered(model) == ["read_file", "write_file", "admin_reset"]


def test_filter_fails_closed_and_the_run_goes_on(impl, caplog):
    def broken(run_context):
        raise LookupError("no session")

    for wrap in (filter_func, prepare_func):
        toolset = demo_toolset([])
        wrapped = (toolset.filtered if wrap is filter_func else toolset.prepared)(
            wrap(impl.compile(), server_id="demo", ctx=broken),
        )
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
            model, result = run(wrapped, User("bob"))
        assert offered(model) == []
        assert result.output  # the run completed
        assert "LookupError" in caplog.text


def test_prepared_drops_only_the_tool_it_cannot_read():
    class Definition:
        def __init__(self, name, metadata=None):
            self.name = name
            self.description = None
            self.parameters_json_schema = {"type": "object"}
            self.metadata = metadata

    good = Definition("read_file")
    bad = Definition("write_file", metadata={"annotations": 42})   # not a mapping
    unnamed = Definition(None)
    context = SimpleNamespace(deps=None)
    prepare = prepare_func(toolfilter_fast.compile(), server_id="demo")
    assert prepare(context, [good, bad, unnamed]) == [good]
    assert filter_func(toolfilter_fast.compile(), server_id="demo")(context, bad) is False
    assert filter_func(toolfilter_fast.compile(), server_id="demo")(context, good) is True


def test_prepared_hides_everything_when_the_filter_raises():
    class Exploding:
        def visible(self, tool, ctx=None):
            raise RuntimeError("boom")

        filter = static_visible = visible

    definitions = [type("D", (), {
        "name": name, "description": None, "parameters_json_schema": {}, "metadata": None,
    })() for name in TOOL_NAMES]
    context = SimpleNamespace(deps=None)
    assert prepare_func(Exploding(), server_id="s")(context, definitions) == []
    assert filter_func(Exploding(), server_id="s")(context, definitions[0]) is False
    assert prepare_func(toolfilter_fast.compile(), server_id="s")(context, definitions) == definitions


@pytest.mark.parametrize(
    "make, kwargs, error, message",
    [
        (filter_func, {"server_id": None}, TypeError, "server_id must be str, not NoneType"),
        (filter_func, {"tool_filter": object()}, TypeError, "tool_filter must be a ToolFilter"),
        (prepare_func, {"ctx": 1}, TypeError, "ctx must be a function"),
        (prepare_func, {"max_tools": -1}, ValueError, "max_tools must be an int >= 0 or None, got -1"),
        (prepare_func, {"max_tools": 2.0}, TypeError, "max_tools must be an int >= 0 or None, not float"),
        (prepare_func, {"max_tools": True}, TypeError, "not bool"),
    ],
)
def test_bad_arguments(make, kwargs, error, message):
    arguments = {"tool_filter": toolfilter_fast.compile(), "server_id": "s", **kwargs}
    with pytest.raises(error, match=message):
        make(arguments.pop("tool_filter"), **arguments)


def test_server_id_is_required():
    with pytest.raises(TypeError, match="server_id"):
        filter_func(toolfilter_fast.compile())  # type: ignore[call-arg]


def test_reprs():
    rules = toolfilter_fast.compile()
    assert isinstance(filter_func(rules, server_id="s"), FilterFunc)
    assert repr(prepare_func(rules, server_id="s", max_tools=3)) == (
        "PrepareFunc(ToolFilter.compile(include=[], exclude=[]), server_id='s', max_tools=3)"
    )
    assert isinstance(prepare_func(rules, server_id="s"), PrepareFunc)
