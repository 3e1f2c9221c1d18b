"""The example of ``toolfilter demo``: a config file, a catalog, two contexts.

The two function patterns below are real: the example config names them as
``{callable = "toolfilter_fast.cli.demo:..."}``, so they are imported the way a
user's own would be.
"""

from __future__ import annotations

from typing import Any

from .._tool import Tool

__all__ = ["EXAMPLE_CATALOG", "EXAMPLE_CONFIG", "EXAMPLE_CONTEXTS", "merge_needs_admin", "on_call"]

EXAMPLE_CONFIG = """\
# Which MCP tools the assistant may see.
[filter]
include = [
    "github/*",
    "fs/read_*",
    "slack/post_message",
    {server = "db", regex = "^(select|explain)_"},
    {callable = "toolfilter_fast.cli.demo:on_call"},
]
exclude = [
    "*/delete_*",
    {server = "*", regex = "^drop_"},
    {callable = "toolfilter_fast.cli.demo:merge_needs_admin"},
]
"""

EXAMPLE_CATALOG: dict[str, list[str]] = {
    "github": ["create_issue", "list_pull_requests", "Delete-Repo", "DELETE.REPO", "merge_pr"],
    "GitHub": ["create_issue"],
    "fs": ["read_file", "read_dir", "write_file", "delete_file"],
    "slack": ["post_message", "list_channels"],
    "db": ["select_rows", "explain_query", "drop_table", "Drop-Index"],
    "pagerduty": ["ack_incident"],
}

EXAMPLE_CONTEXTS: list[dict[str, Any]] = [{"role": "user"}, {"role": "admin", "on_call": True}]


def merge_needs_admin(tool: Tool, ctx: Any) -> bool:
    """Exclude function: merging pull requests is for admins."""
    return tool.name == "merge_pr" and (ctx or {}).get("role") != "admin"


def on_call(tool: Tool, ctx: Any) -> bool:
    """Include function: the pager tools, for whoever is on call.

    Reads ``ctx["on_call"]`` without a default on purpose: for a ctx without
    that key it raises KeyError, and the filter fails closed (hidden).
    """
    if tool.server_id != "pagerduty":
        return False
    return bool(ctx["on_call"])


def example_tools() -> list[Tool]:
    return [Tool(server, name) for server, names in EXAMPLE_CATALOG.items() for name in names]
