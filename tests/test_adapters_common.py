"""What every adapter shares: lazy imports, MCP tool conversion, fail-closed lists."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

import toolfilter_fast
from toolfilter_fast import Tool
from toolfilter_fast.adapters import _common

FRAMEWORKS = ("agents", "pydantic_ai", "fastmcp", "google.adk", "mcp")


def run_python(code):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=False,
    )


def test_the_package_and_three_adapters_import_no_framework():
    result = run_python(f"""
        import sys
        import toolfilter_fast, toolfilter_fast.adapters
        import toolfilter_fast.adapters.openai_agents
        import toolfilter_fast.adapters.pydantic_ai
        import toolfilter_fast.adapters.google_adk
        loaded = [name for name in {FRAMEWORKS!r} if name in sys.modules]
        print(loaded)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_fastmcp_adapter_without_fastmcp_says_which_extra():
    result = run_python("""
        import sys
        sys.modules["fastmcp"] = None  # as if it were not installed
        try:
            import toolfilter_fast.adapters.fastmcp
        except ImportError as err:
            print(err)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "toolfilter_fast.adapters.fastmcp needs FastMCP: pip install 'toolfilter_fast[fastmcp]'"
    )


class Annotations:
    """A pydantic-like model: dumps itself with the wire's camelCase keys."""

    def model_dump(self, *, by_alias, exclude_none):
        assert by_alias and exclude_none
        return {"destructiveHint": True}


@pytest.mark.parametrize(
    "definition",
    [
        {"name": "x", "description": "d", "inputSchema": {"type": "object"},
         "annotations": {"destructiveHint": True}},
        # mcp SDK 2.x objects: snake_case attributes, pydantic annotations
        SimpleNamespace(name="x", description="d", input_schema={"type": "object"},
                        annotations=Annotations()),
        # mcp SDK 1.x objects: camelCase attributes
        SimpleNamespace(name="x", description="d", inputSchema={"type": "object"},
                        annotations=Annotations()),
    ],
    ids=["mapping", "sdk-2", "sdk-1"],
)
def test_mcp_tool_reads_every_sdk_generation(definition):
    assert _common.mcp_tool("s", definition) == Tool(
        "s", "x", "d", {"type": "object"}, {"destructiveHint": True},
    )


def test_mcp_tool_with_installed_sdk():
    mcp_types = pytest.importorskip("mcp.types", reason="needs an adapter extra (mcp)")
    tool = mcp_types.Tool(
        name="x", input_schema={"type": "object"},
        annotations=mcp_types.ToolAnnotations(read_only_hint=True, destructive_hint=False),
    )
    assert _common.mcp_tool("s", tool) == Tool(
        "s", "x", None, {"type": "object"}, {"readOnlyHint": True, "destructiveHint": False},
    )


@pytest.mark.parametrize("annotations", [42, "destructive", ["a"]])
def test_annotations_must_be_mappings_or_models(annotations):
    with pytest.raises(TypeError, match="annotations must be a mapping or a pydantic model"):
        _common.mcp_tool("s", SimpleNamespace(name="x", annotations=annotations))


def test_tool_label_never_raises():
    assert _common.tool_label({"name": "a"}) == "a"
    assert _common.tool_label(SimpleNamespace(name=3)) == "3"
    assert _common.tool_label(object()) == "<object>"


def keep(tools, ctx=lambda: None, tool_filter=None):
    return _common.keep_visible(
        tool_filter or toolfilter_fast.compile(exclude=["*/b"]), "s", tools,
        lambda name: Tool("s", name), ctx, where="test",
    )


def test_keep_visible_keeps_order_and_objects():
    names = ["c", "b", "a", "b2"]
    kept = keep(names)
    assert kept == ["c", "a", "b2"]
    assert all(k is n for k, n in zip(kept, ["c", "a", "b2"], strict=True))


def test_keep_visible_without_ctx_applies_static_patterns_only():
    calls = []

    def record(tool, ctx):
        calls.append(tool.name)
        return False

    rules = toolfilter_fast.compile(include=["*/a", record])
    assert keep(["a", "b"], ctx=None, tool_filter=rules) == ["a", "b"]
    assert calls == []
    assert keep(["a", "b"], tool_filter=rules) == ["a"]
    assert calls == ["b"]


def test_keep_visible_fails_closed_at_the_smallest_scope(caplog):
    with caplog.at_level(logging.WARNING, logger="toolfilter_fast.adapters"):
        assert keep(["a", 7, "c"]) == ["a", "c"]                       # 7 is no str name
        assert "tool '<int>' of server 's' hidden" in caplog.text
        caplog.clear()

        def broken():
            raise ValueError("ctx")

        assert keep(["a", "c"], ctx=broken) == []
        assert "every tool (2)" in caplog.text


def test_keep_visible_counts_copies_as_dropped():
    class Copying:
        def filter(self, tools, ctx):
            return [Tool(tool.server_id, tool.name) for tool in tools]

        visible = static_visible = filter

    assert keep(["a"], tool_filter=Copying()) == []
