"""An MCP server over stdio that writes its JSON-RPC by hand, for the tests of how
toolfilter_fast reads tool hints through the MCP SDK's client.

A server written with the SDK cannot send ``{"destructiveHint": "false"}``: its own
models would make it a boolean before it is sent. This one sends each tool's
annotations exactly as :data:`TOOLS` spells them, so a test sees what a client makes
of hints that are not JSON booleans. It answers ``initialize`` (with the protocol
revision the client asks for, when it knows it), ``ping``, ``tools/list`` and
``tools/call`` (each tool answers with its own name, so a test can see which tool
ran); any other request gets the JSON-RPC "method not found" error, and
notifications are read and dropped. Run it as ``_raw_hints_server.py [name]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SCRIPT = str(Path(__file__).resolve())

#: The tools, in the order they are listed, with their annotations as sent.
TOOLS = (
    ("read_file", {"readOnlyHint": True, "destructiveHint": False}),
    ("merge_pr", {"destructiveHint": "false"}),      # the SDK reads False; not a boolean
    ("wipe_cache", {"readOnlyHint": 1}),             # the SDK reads True; not a boolean
    ("delete_repo", {"destructiveHint": True}),
    ("close_issue", {"readOnlyHint": "true", "destructiveHint": 0, "title": "Close"}),
)

#: The names of the tools whose hints are all real booleans.
HONEST = ("read_file", "delete_repo")

#: The names of the tools a client that reads hints as sent must judge by the MCP
#: defaults (not read-only, destructive) where the SDK's models believe them.
COERCED = ("merge_pr", "wipe_cache", "close_issue")

#: The protocol revisions this server answers with when a client asks for them.
REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def definition(name: str, annotations: dict) -> dict:
    return {
        "name": name,
        "description": f"The {name.replace('_', ' ')} tool.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
        "annotations": annotations,
    }


def answer(request: dict) -> dict | None:
    """The response to one message; None for a notification."""
    if "id" not in request:
        return None
    method, params = request.get("method"), request.get("params") or {}
    reply: dict = {"jsonrpc": "2.0", "id": request["id"]}
    if method == "initialize":
        asked = params.get("protocolVersion")
        reply["result"] = {
            "protocolVersion": asked if asked in REVISIONS else REVISIONS[-2],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER_NAME, "version": "1.0.0"},
        }
    elif method == "ping":
        reply["result"] = {}
    elif method == "tools/list":
        reply["result"] = {"tools": [definition(name, hints) for name, hints in TOOLS]}
    elif method == "tools/call":
        name = params.get("name")
        if name in dict(TOOLS):
            reply["result"] = {"content": [{"type": "text", "text": f"ran {name}"}]}
        else:
            reply["result"] = {"content": [{"type": "text", "text": f"Unknown tool: {name}"}],
                               "isError": True}
    else:
        reply["error"] = {"code": -32601, "message": "Method not found"}
    return reply


SERVER_NAME = sys.argv[1] if __name__ == "__main__" and len(sys.argv) > 1 else "raw"


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        reply = answer(message) if isinstance(message, dict) else None
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
