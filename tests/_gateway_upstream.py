"""The two upstream MCP servers the gateway tests run as real stdio processes.

``python _gateway_upstream.py alpha|beta [PIDFILE]``: a FastMCP server over
stdio that writes its process id to PIDFILE first (so a test can kill it, and
check that nothing is left behind). Each tool answers with its server and its
own name, so a test can see which tool of which server really ran.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SCRIPT = str(Path(__file__).resolve())

#: The tools of each server, in the order it lists them (not sorted: the
#: gateway sorts each server's tools by name).
TOOLS = {
    "alpha": ("write_file", "read_file", "delete_repo", "admin_reset"),
    "beta": ("search_docs", "fetch_page", "admin_purge"),
}


def build(name: str):
    from fastmcp import FastMCP

    server = FastMCP(name)
    for tool in TOOLS[name]:
        def run(text: str = "", _tool: str = tool) -> str:
            return f"{name} {_tool} {text}".strip()

        hints = {"readOnlyHint": True} if tool.startswith(("read", "search", "fetch")) else None
        server.tool(run, name=tool, description=f"{name}'s {tool}", annotations=hints)
    return server


if __name__ == "__main__":
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(str(os.getpid()), encoding="utf-8")
    build(sys.argv[1]).run(transport="stdio", show_banner=False, log_level="WARNING")
