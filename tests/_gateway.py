"""What the gateway tests share: the servers file and policy over the two test
upstreams, and ``toolfilter serve`` run as a real process.

Every process a test starts is ended by the test (``Served.stop``), and the
upstreams' process ids (written by ``_gateway_upstream.py``) let it check that
none is left behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _gateway_upstream import SCRIPT

#: The policy of the tests: read-only and write tools of alpha and beta's
#: search for everyone, every tool but delete_* for a caller with scope admin.
POLICY = """\
[filter]
include = [
  "alpha/read_*", "alpha/write_*", "beta/search_*",
  {cel = 'ctx != null && "admin" in ctx.scopes'},
]
exclude = ["*/delete_*"]
"""

TOKENS = {
    "token-alice": {"client_id": "alice", "scopes": ["admin"]},
    "token-bob": {"client_id": "bob", "scopes": ["user"]},
}

ADMIN = ["alpha__admin_reset", "alpha__read_file", "alpha__write_file",
         "beta__admin_purge", "beta__fetch_page", "beta__search_docs"]
USER = ["alpha__read_file", "alpha__write_file", "beta__search_docs"]

#: How long a test waits for a gateway to start or stop, at most.
DEADLINE = 90.0


def write_setup(directory: Path) -> dict[str, Path]:
    """The servers file, the policy and the token file in ``directory``."""
    servers = {name: {"command": sys.executable,
                      "args": [SCRIPT, name, str(directory / f"{name}.pid")]}
               for name in ("alpha", "beta")}
    return write_files(directory, servers, POLICY)


def write_files(directory: Path, servers: dict, policy: str) -> dict[str, Path]:
    """``servers.json`` (``{"mcpServers": servers}``), ``policy.toml`` and ``tokens.json``."""
    paths = {"servers": directory / "servers.json", "policy": directory / "policy.toml",
             "tokens": directory / "tokens.json"}
    paths["servers"].write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    paths["policy"].write_text(policy, encoding="utf-8")
    paths["tokens"].write_text(json.dumps(TOKENS), encoding="utf-8")
    return paths


def upstream_pids(directory: Path) -> dict[str, int]:
    return {name: int((directory / f"{name}.pid").read_text())
            for name in ("alpha", "beta") if (directory / f"{name}.pid").exists()}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def toolfilter(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "toolfilter_fast", *args],
                          capture_output=True, text=True, timeout=DEADLINE, **kwargs)


@dataclass
class Served:
    """A ``toolfilter serve --transport http`` process and its log."""

    process: subprocess.Popen
    log: Path
    url: str

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_for(self, pattern: str, after: int = 0) -> re.Match:
        """The first match of ``pattern`` in the log past offset ``after``."""
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            found = re.compile(pattern).search(self.text(), after)
            if found:
                return found
            if self.process.poll() is not None:
                raise AssertionError(f"the gateway exited ({self.process.returncode}):\n"
                                     f"{self.text()}")
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} never came in the log:\n{self.text()}")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


def serve_http(directory: Path, *extra: str, ready: str = r"gateway ready on (http://\S+):"
               ) -> Served:
    paths = write_setup(directory) if not (directory / "servers.json").exists() else {
        "servers": directory / "servers.json", "policy": directory / "policy.toml",
        "tokens": directory / "tokens.json"}
    log = directory / "serve.log"
    with log.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolfilter_fast", "serve", "--config", str(paths["policy"]),
             "--servers", str(paths["servers"]), "--transport", "http", "--port", "0",
             "--token-file", str(paths["tokens"]), *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )
    served = Served(process, log, "")
    try:
        found = served.wait_for(ready)
    except BaseException:
        served.stop()
        raise
    served.url = found[1] if found.groups() else ""
    return served


def raw_http(http, url: str, token: str):
    """``post(message)``: one JSON-RPC message POSTed to the streamable-HTTP
    endpoint ``url`` on ``http`` (an ``httpx.AsyncClient``) with ``token``;
    the answer (from an SSE event or a JSON body), None when there is none.
    It keeps the session id it is given, and the protocol revision of an
    ``initialize`` answer."""
    headers = {"authorization": f"Bearer {token}", "accept": "application/json, "
               "text/event-stream", "content-type": "application/json"}

    async def post(message: dict):
        response = await http.post(url, json=message, headers=headers)
        response.raise_for_status()
        if "mcp-session-id" in response.headers:
            headers["mcp-session-id"] = response.headers["mcp-session-id"]
        if not response.text.strip():
            return None
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
            answer = json.loads(data[-1])
        else:
            answer = response.json()
        if message.get("method") == "initialize" and "result" in answer:
            headers["mcp-protocol-version"] = answer["result"]["protocolVersion"]
        return answer

    return post


# --- hostile upstreams (``_gateway_raw_upstream.py``) ----------------------------------

from _gateway_raw_upstream import SCRIPT as RAW_SCRIPT  # noqa: E402


def raw_setup(directory: Path, specs: dict[str, dict], policy: str) -> dict[str, Path]:
    """A servers file of raw upstreams (``{name: spec}``, each spec recording what
    ran to ``NAME.record`` and its pid to ``NAME.pid``), the policy, the tokens."""
    servers = {}
    for name, spec in specs.items():
        spec = {"record": str(directory / f"{name}.record"),
                "pid": str(directory / f"{name}.pid"), **spec}
        (directory / f"{name}.spec.json").write_text(json.dumps(spec), encoding="utf-8")
        servers[name] = {"command": sys.executable,
                         "args": [RAW_SCRIPT, str(directory / f"{name}.spec.json")]}
    return write_files(directory, servers, policy)


def ran(directory: Path, name: str) -> list[tuple[str, str]]:
    """What the raw upstream ``name`` really ran: ``(method, name or URI)``."""
    path = directory / f"{name}.record"
    if not path.exists():
        return []
    return [(line["method"], line["name"]) for line in
            map(json.loads, path.read_text(encoding="ascii").splitlines())]


def stdio_gateway(paths: dict[str, Path], log: Path, *extra: str):
    """FastMCP's client on ``toolfilter serve`` over stdio (this environment
    passed on whole: FastMCP's transport passes only a few variables)."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    transport = StdioTransport(
        sys.executable,
        ["-m", "toolfilter_fast", "serve", "--config", str(paths["policy"]),
         "--servers", str(paths["servers"]), *extra],
        keep_alive=False, log_file=log, env=dict(os.environ))
    return Client(transport, timeout=DEADLINE, init_timeout=DEADLINE)


def processes_with(token: str) -> list[int]:
    """The live processes whose command line holds ``token`` (found by /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


# --- an upstream whose list changes (``reread``) ----------------------------------------

#: The gateway's log line for a change notice of upstream NAME.
NOTICE = "upstream {name!r} sent notifications/tools/list_changed"


def change_tools(directory: Path, name: str, tools: list, log: Path) -> None:
    """Gives the raw upstream ``name`` (spec ``reread``) the list ``tools`` and
    waits until the gateway has its change notice (its log line): the next
    listing reads the upstream again."""
    notice = NOTICE.format(name=name)
    seen = log.read_text(encoding="utf-8", errors="replace").count(notice)
    spec_path = directory / f"{name}.spec.json"
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    spec["tools"] = tools
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    end = time.monotonic() + DEADLINE
    while log.read_text(encoding="utf-8", errors="replace").count(notice) <= seen:
        if time.monotonic() > end:
            raise AssertionError(f"no change notice of {name!r} in the log:\n"
                                 f"{log.read_text(encoding='utf-8', errors='replace')}")
        time.sleep(0.02)
