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
  changes the tools between listings), and send
  ``notifications/tools/list_changed`` each time the file changes (looked at
  every 10 ms), unless ``silent``;
* ``lists``: a file that gets one line per ``tools/list`` it answers.

The modern era's ``server/discover`` is answered "method not found", so a
client falls back to the ``initialize`` handshake.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

SCRIPT = str(Path(__file__).resolve())
PROTOCOL = "2025-06-18"


_SENDING = threading.Lock()


def _send(message: dict) -> None:
    with _SENDING:  # the file watcher sends too
        sys.stdout.write(json.dumps(message) + "\n")  # ensure_ascii: surrogates as escapes
        sys.stdout.flush()


def _watch(path: str) -> None:
    """Sends ``notifications/tools/list_changed`` whenever the spec file changes."""
    def stamp():
        info = os.stat(path)
        return (info.st_mtime_ns, info.st_size)

    last = stamp()
    while True:
        time.sleep(0.01)
        now = stamp()
        if now != last:
            last = now
            _send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


def _record(spec: dict, method: str, name: str) -> None:
    if spec.get("record"):
        with open(spec["record"], "a", encoding="ascii") as out:
            out.write(json.dumps({"method": method, "name": name}) + "\n")


def _reread(path: str) -> dict:
    for _ in range(100):  # a test may be writing it: wait for the whole file
        try:
            return json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            time.sleep(0.01)
    return json.loads(Path(path).read_text(encoding="utf-8"))


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
            spec.update(_reread(spec["_path"]))
        spec["_lists"] = spec.get("_lists", 0) + 1
        if spec.get("lists"):
            with open(spec["lists"], "a", encoding="ascii") as out:
                out.write("tools/list\n")
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
    if spec.get("reread") and not spec.get("silent"):
        threading.Thread(target=_watch, args=(path,), daemon=True).start()
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
