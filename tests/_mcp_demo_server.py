"""A small real FastMCP server for the adapter tests.

Imported in-process (``build_server()``), or run as a script it serves stdio,
for the clients that spawn a server (OpenAI Agents SDK, Google ADK). Each tool
answers with its own name, so a test can see which tool really ran.
"""

from __future__ import annotations

import sys
from pathlib import Path

#: The tools this server offers, in the order it lists them.
TOOL_NAMES = ("read_file", "write_file", "delete_repo", "admin_reset")

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


if __name__ == "__main__":
    build_server(sys.argv[1] if len(sys.argv) > 1 else "demo").run(
        transport="stdio", show_banner=False,
    )
