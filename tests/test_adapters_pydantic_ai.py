"""The pydantic-ai adapter, against the installed ``pydantic-ai-slim``.

Agents run on pydantic-ai's own ``TestModel``/``FunctionModel`` (no LLM API):
the tests read the tool definitions the model was offered, and which tool
functions really ran. The MCP tests use pydantic-ai's ``MCPToolset`` over the
demo FastMCP server in-process.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

import toolfilter_fast

pydantic_ai = pytest.importorskip("pydantic_ai", reason="needs the pydantic-ai extra")

from _mcp_demo_server import (  # noqa: E402
    POLICY_CONFIG,
    SCRIPT,
    TOOL_NAMES,
    build_policy_server,
    build_server,
)
from fastmcp.client.transports import StdioTransport  # noqa: E402
from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.mcp import MCPToolset  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ImageUrl,
    ModelResponse,
    TextContent,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402

from toolfilter_fast.adapters.pydantic_ai import (  # noqa: E402
    FilterFunc,
    PrepareFunc,
    filter_func,
    filtered_toolset,
    prepare_func,
    prompt_text,
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


# --- a Policy ------------------------------------------------------------------------

def policy_toolset(impl, stdio=True, **kwargs):
    """The policy server (spawned over stdio, or in-process) through
    ``prepared(prepare_func(policy))``."""
    server = MCPToolset(
        StdioTransport(command=sys.executable, args=[SCRIPT, "demo", "policy"]) if stdio
        else build_policy_server(),
    )
    return server.prepared(prepare_func(impl.Policy.from_config(POLICY_CONFIG), server_id="demo",
                                        **kwargs))


def run_turn(toolset, prompt, deps, calls=()):
    """One run: the tools the model was offered, and what each call in ``calls``
    (made in one response) was answered, the name taken out."""
    offered = []

    def respond(messages, info: AgentInfo):
        offered.append([tool.name for tool in info.function_tools])
        if len(offered) == 1 and calls:
            return ModelResponse(parts=[ToolCallPart(name, args) for name, args in calls])
        return ModelResponse(parts=[TextPart("done")])

    result = Agent(FunctionModel(respond), toolsets=[toolset]).run_sync(prompt, deps=deps)
    answers = {
        part.tool_name: str(part.content).split(". Available tools")[0].replace(repr(part.tool_name), "NAME")
        for message in result.all_messages() for part in getattr(message, "parts", [])
        if part.part_kind in ("tool-return", "retry-prompt")
    }
    assert result.output == "done"
    return offered[0], answers


def test_a_policy_with_all_four_stages_over_a_stdio_server(impl):
    toolset = policy_toolset(impl)
    admin = {"role": "admin", "focus": "demo:search"}

    # The prompt says "reset": admin_reset's group is live; the lens keeps the
    # search widget's tools and the globals; the budget keeps the first four.
    offered, answers = run_turn(toolset, "please reset the cache", admin, calls=[
        ("demo.search.clear", {}), ("never_existed", {}), ("read_file", {"path": "p"}),
    ])
    assert offered == ["read_file", "write_file", "admin_reset", "demo.search.type_text"]
    assert answers["demo.search.clear"] == answers["never_existed"] == "Unknown tool name: NAME"
    assert answers["read_file"] == "read_file p"

    # No "reset": the groups drop admin_reset; the other widget's focus.
    offered, _ = run_turn(toolset, "hello", {"role": "admin", "focus": "demo:submit"})
    assert offered == ["read_file", "write_file", "demo.submit.click"]

    # No admin: the CEL pattern drops admin_reset; no focus: the lens is off and
    # the budget cuts the fifth survivor. delete_repo is destructive: never shown.
    offered, _ = run_turn(toolset, "please reset the cache", {"role": "user"})
    assert offered == ["read_file", "write_file", "demo.search.type_text", "demo.search.clear"]


@dataclass
class Session:
    role: str
    focus: str | None = None
    last_message: str | None = None


def test_policy_ctx_message_and_focus_functions(impl):
    seen = []

    def message(run_context):
        seen.append(run_context.prompt)
        return run_context.deps.last_message

    toolset = policy_toolset(
        impl, stdio=False, ctx=lambda run_context: {"role": run_context.deps.role},
        message=message, focus=lambda run_context: run_context.deps.focus,
    )
    deps = Session("admin", focus="demo:submit", last_message="reset it")
    offered, _ = run_turn(toolset, "hello", deps)
    assert offered == ["read_file", "write_file", "admin_reset", "demo.submit.click"]
    assert seen and set(seen) == {"hello"}
    # The default focus is deps.focus (or deps["focus"]).
    toolset = policy_toolset(impl, stdio=False,
                             ctx=lambda run_context: {"role": run_context.deps.role})
    assert run_turn(toolset, "hello", Session("admin", "demo:submit"))[0] == [
        "read_file", "write_file", "demo.submit.click",
    ]


def test_prompt_text_reads_the_text_parts_of_a_prompt():
    def text(prompt):
        return prompt_text(SimpleNamespace(prompt=prompt))

    assert text("reset it") == "reset it"
    assert text(None) is None
    assert text(["reset", ImageUrl("https://example.org/a.png"), TextContent("the cache")]) == (
        "reset\nthe cache"
    )


def test_filter_func_takes_a_policy_without_a_budget_and_judges_each_tool_alone(impl):
    unbudgeted = {key: value for key, value in POLICY_CONFIG.items() if key != "budget"}
    toolset = MCPToolset(build_policy_server()).filtered(
        filter_func(impl.Policy.from_config(unbudgeted), server_id="demo"),
    )
    offered, _ = run_turn(toolset, "reset", {"role": "admin", "focus": "demo:search"})
    assert offered == [
        "read_file", "write_file", "admin_reset", "demo.search.type_text", "demo.search.clear",
    ]


@pytest.mark.parametrize("config, cut", [
    ({"budget": {"max_tools": 4}}, r"\(max_tools=4\)"),
    ({"focus_lens": {"max_tools": 2}}, r"\(focus_lens max_tools=2\)"),
    # Relevance ranks a tool against the others of its list: alone it is always kept.
    ({"relevance": {"top_k": 2}}, r"\(relevance top_k=2\)"),
])
def test_filter_func_refuses_a_policy_it_cannot_cut(impl, config, cut):
    with pytest.raises(TypeError, match=r"filter_func \(toolset.filtered\) judges one tool at a "
                                         r"time, so it cannot cut the Policy's list " + cut +
                                         r": use prepare_func \(toolset.prepared\)"):
        filter_func(impl.Policy.from_config(config), server_id="demo")
    assert isinstance(prepare_func(impl.Policy.from_config(config), server_id="demo"), PrepareFunc)


def test_a_policy_fails_closed_and_the_run_goes_on(impl, caplog):
    def broken(run_context):
        raise LookupError("no session")

    for kwargs in ({"message": broken}, {"focus": broken}, {"ctx": broken},
                   {"focus": lambda run_context: "not a focus:"}):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
            offered, _ = run_turn(policy_toolset(impl, stdio=False, **kwargs), "reset",
                                  {"role": "admin"})
        assert offered == []
        assert "every tool (7) of server 'demo' hidden" in caplog.text


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"message": "prompt"}, "message must be a function from the framework's context to "
                                "the turn's user message, not str"),
        ({"focus": 3}, "focus must be a function from the framework's context to a Focus"),
    ],
)
def test_bad_policy_arguments(impl, kwargs, message):
    policy = impl.Policy()
    for make in (filter_func, prepare_func):
        with pytest.raises(TypeError, match=message):
            make(policy, server_id="demo", **kwargs)


def test_message_and_focus_need_a_policy():
    for make in (filter_func, prepare_func):
        with pytest.raises(TypeError, match="message= is read by a Policy's stages"):
            make(toolfilter_fast.compile(), server_id="demo", message=lambda run_context: "x")
        with pytest.raises(TypeError, match="focus= is read by a Policy's stages"):
            make(toolfilter_fast.compile(), server_id="demo", focus=lambda run_context: None)


# --- hints as the server sent them ------------------------------------------------------


def raw_toolset():
    from _raw_hints_server import SCRIPT as RAW_SCRIPT

    return MCPToolset(StdioTransport(command=sys.executable, args=[RAW_SCRIPT, "raw"]))


def test_filtered_toolset_judges_hints_as_the_server_sent_them():
    from test_sdk_hints import NO_DESTRUCTIVE, kept_as_sent

    toolset = filtered_toolset(raw_toolset(), NO_DESTRUCTIVE, server_id="raw")
    offered, answers = run_turn(toolset, "merge it", None,
                                calls=[("merge_pr", {}), ("never_was", {})])
    assert offered == kept_as_sent() == ["read_file"]
    assert answers["merge_pr"] == answers["never_was"]


def test_filtered_toolset_checks_its_arguments():
    with pytest.raises(TypeError, match="pydantic-ai toolset"):
        filtered_toolset(object(), toolfilter_fast.compile(), server_id="raw")
    with pytest.raises(TypeError, match="server_id"):
        filtered_toolset(raw_toolset(), toolfilter_fast.compile(), server_id=None)
