"""Small real FastMCP servers for the adapter tests.

Imported in-process (``build_server()``, ``build_policy_server()``), or run as a
script it serves stdio (``_mcp_demo_server.py [name] [policy]``), for the
clients that spawn a server (OpenAI Agents SDK, Google ADK, pydantic-ai). Each
tool answers with its own name, so a test can see which tool really ran.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The tools this server offers, in the order it lists them.
TOOL_NAMES = ("read_file", "write_file", "delete_repo", "admin_reset")

#: The tools of the policy server, in the order it lists them: the four above,
#: every hint spelled out, and a UI session's widget tools
#: (``session.widget.action``, for the focus lens).
POLICY_TOOL_NAMES = (
    "read_file", "write_file", "delete_repo", "admin_reset",
    "demo.search.type_text", "demo.search.clear", "demo.submit.click",
)

#: A policy with all four stages, for the policy server (as ``Policy.from_config``
#: reads it): no destructive tool (an annotation pattern), admin tools for admins
#: only (a CEL pattern over ctx); files and the UI always, admin tools only when
#: the message says "reset" (groups); the focus lens; at most four tools.
POLICY_CONFIG = {
    "filter": {
        "exclude": [
            {"annotations": {"destructiveHint": True}},
            {"cel": 'tool.name.startsWith("admin_") && (ctx == null || ctx.role != "admin")'},
        ],
    },
    "tool_filter_groups": [
        {"mode": "always", "tools": ["demo__read_*", "demo__write_*", "demo__demo.*"]},
        {"mode": "dynamic", "tools": ["demo__admin_*"], "keywords": ["reset"]},
    ],
    "budget": {"max_tools": 4},
}

SCRIPT = str(Path(__file__).resolve())


def build_server(name: str = "demo", transforms: list | None = None, **kwargs):
    from fastmcp import FastMCP

    server = FastMCP(name, transforms=transforms, **kwargs)

    @server.tool(annotations={"readOnlyHint": True})
    def read_file(path: str) -> str:
        """Reads a file."""
        return f"read_file {path}"

    @server.tool
    def write_file(path: str, text: str = "") -> str:
        """Writes a file."""
        return f"write_file {path}"

    @server.tool(annotations={"destructiveHint": True})
    def delete_repo(repo: str) -> str:
        """Deletes a repository."""
        return f"delete_repo {repo}"

    @server.tool
    def admin_reset() -> str:
        """Resets everything."""
        return "admin_reset"

    return server


def build_policy_server(name: str = "demo", transforms: list | None = None, **kwargs):
    from fastmcp import FastMCP

    server = FastMCP(name, transforms=transforms, **kwargs)
    safe = {"readOnlyHint": False, "destructiveHint": False}

    @server.tool(annotations={"readOnlyHint": True})
    def read_file(path: str) -> str:
        """Reads a file."""
        return f"read_file {path}"

    @server.tool(annotations=safe)
    def write_file(path: str, text: str = "") -> str:
        """Writes a file."""
        return f"write_file {path}"

    @server.tool(annotations={"readOnlyHint": False, "destructiveHint": True})
    def delete_repo(repo: str) -> str:
        """Deletes a repository."""
        return f"delete_repo {repo}"

    @server.tool(annotations=safe)
    def admin_reset() -> str:
        """Resets everything."""
        return "admin_reset"

    @server.tool(name="demo.search.type_text", annotations=safe)
    def type_text(text: str = "") -> str:
        """Types into the search box."""
        return "demo.search.type_text"

    @server.tool(name="demo.search.clear", annotations=safe)
    def clear() -> str:
        """Clears the search box."""
        return "demo.search.clear"

    @server.tool(name="demo.submit.click", annotations=safe)
    def click() -> str:
        """Clicks the submit button."""
        return "demo.submit.click"

    return server


if __name__ == "__main__":
    build = build_policy_server if sys.argv[2:3] == ["policy"] else build_server
    build(sys.argv[1] if len(sys.argv) > 1 else "demo").run(
        transport="stdio", show_banner=False,
    )
