"""A stdio MCP server that lists exactly what its spec file says, for the
gateway's tests of hostile upstreams: ``python _gateway_raw_upstream.py SPEC.json``.

It speaks JSON-RPC itself (one message a line, as the stdio transport frames
them) rather than through an SDK, because the point is to send what an SDK's
server would refuse or change: tools named ``""`` or ``"a__"``, names with NUL
or lone surrogates (written as JSON ``\\ud800`` escapes), a prompt named like a
hidden tool. The spec (JSON) holds:

* ``tools``, ``prompts``, ``resources``, ``templates``: the lists as sent;
* ``record``: a file that gets one JSON line per ``tools/call``,
  ``prompts/get`` and ``resources/read`` it answers (what really ran);
* ``pid``: a file for the process id;
* ``hang``: never answer anything (an upstream that never starts);
* ``list_delay``: seconds to sleep before the ``tools/list`` answers whose
  numbers (1 for the first) are in ``slow_lists`` (every one without it);
* ``stderr``: lines to write to stderr when it starts (a noisy server);
* ``reread``: read the spec file again before each ``tools/list`` (a test
  changes the tools between listings).

The modern era's ``server/discover`` is answered "method not found", so a
client falls back to the ``initialize`` handshake.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

SCRIPT = str(Path(__file__).resolve())
PROTOCOL = "2025-06-18"


def _send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")  # ensure_ascii: surrogates as escapes
    sys.stdout.flush()


def _record(spec: dict, method: str, name: str) -> None:
    if spec.get("record"):
        with open(spec["record"], "a", encoding="ascii") as out:
            out.write(json.dumps({"method": method, "name": name}) + "\n")


def _answer(spec: dict, method: str, params: dict) -> dict:
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", PROTOCOL)
                if params.get("protocolVersion") in ("2025-06-18", "2025-03-26", "2025-11-25")
                else PROTOCOL,
                "capabilities": {"tools": {}, "prompts": {}, "resources": {}},
                "serverInfo": {"name": "raw", "version": "1"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        if spec.get("reread"):
            spec.update(json.loads(Path(spec["_path"]).read_text(encoding="utf-8")))
        spec["_lists"] = spec.get("_lists", 0) + 1
        if "slow_lists" not in spec or spec["_lists"] in spec["slow_lists"]:
            time.sleep(spec.get("list_delay", 0))
        return {"tools": spec.get("tools", [])}
    if method == "prompts/list":
        return {"prompts": spec.get("prompts", [])}
    if method == "resources/list":
        return {"resources": spec.get("resources", [])}
    if method == "resources/templates/list":
        return {"resourceTemplates": spec.get("templates", [])}
    if method == "tools/call":
        _record(spec, method, params["name"])
        return {"content": [{"type": "text", "text": f"ran {params['name']}"}], "isError": False}
    if method == "prompts/get":
        _record(spec, method, params["name"])
        return {"messages": [{"role": "user",
                              "content": {"type": "text", "text": f"got {params['name']}"}}]}
    if method == "resources/read":
        _record(spec, method, params["uri"])
        return {"contents": [{"uri": params["uri"], "mimeType": "text/plain",
                              "text": f"read {params['uri']}"}]}
    raise LookupError(method)


def main(path: str) -> None:
    spec = json.loads(Path(path).read_text(encoding="utf-8"))
    spec["_path"] = path
    if spec.get("pid"):
        Path(spec["pid"]).write_text(str(os.getpid()), encoding="utf-8")
    for line in spec.get("stderr", []):
        sys.stderr.write(line + "\n")
    sys.stderr.flush()
    for line in sys.stdin:
        if spec.get("hang") or not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # a notification, or an answer to a request of ours
        try:
            result = _answer(spec, message["method"], message.get("params") or {})
        except LookupError:
            _send({"jsonrpc": "2.0", "id": message["id"],
                   "error": {"code": -32601, "message": "Method not found"}})
            continue
        _send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main(sys.argv[1])
