"""The gateway against a direct connection to its upstreams, in one run.

    python benches/bench_gateway.py                 # the full run, the tables
    python benches/bench_gateway.py --quick         # fewer rounds
    python benches/bench_gateway.py --only big,lists  # some rows only (big, lists, calls, concurrent)
    pytest benches/bench_gateway.py                 # small, once: the answers checked

Every upstream is a real process over stdio: this file run as ``--upstream K N``
(a FastMCP server of N tools; ``--http PORT`` serves it over HTTP instead, for
the direct HTTP rows) or ``--raw-upstream K N`` (a few lines of JSON-RPC, light
enough to run fifty). The gateway is ``toolfilter serve`` as a process, over
stdio (``--ctx``) or HTTP (a token file of five tokens), with a policy of a
glob exclude, an annotation exclude and a CEL include reading ctx (it keeps
nine tools in ten). Both sides are timed with a raw JSON-RPC client (one line
per message over stdio, a POST per request over HTTP), so the rows time the
servers and the transport, not a client's model building. Rounds are
interleaved (direct and gateway in turn, which one first swapped every round).

Rows, each with its target and met/missed:

* ``tools/list``, 1 and 6 upstreams: the gateway's median over the median of
  the slowest single upstream listed directly (each round lists every
  upstream directly and takes the slowest): at most 1.3x;
* ``tools/call`` round trip of a visible tool, gateway over direct: at most 1.2x;
* 10,000 tools over 50 upstreams, listed through the gateway after warm-up:
  p50 under 20 ms, from the request sent to the answer's last byte read
  (the gateway and the transport); the client's ``json.loads`` of that
  answer (some 2 MB) is timed apart, and its own row adds it;
* 50 concurrent HTTP clients with 5 tokens, listing and calling: throughput
  and p99 reported, target 0 errors (and each token's list checked).

Then the latency table: direct and gateway, 1 and 6 upstreams, stdio and
HTTP, median and p99.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

SCRIPT = str(Path(__file__).resolve())
PROTOCOL = "2025-06-18"
#: How long a process may take to start or answer, at most (a loaded machine).
DEADLINE = 300.0

POLICY = """\
[filter]
include = [{cel = 'ctx != null && "user" in ctx.scopes'}]
exclude = ["*/delete_*", {annotations = {destructiveHint = true}, trusted = ["*"]}]
"""
CTX = {"client_id": "bench", "scopes": ["user"], "claims": {}, "headers": {}}
#: Five tokens: four users (the same list), one caller with no scope (nothing shown).
TOKENS = {f"token-{i}": {"client_id": f"client-{i}", "scopes": ["user"]} for i in range(4)}
TOKENS["token-4"] = {"client_id": "client-4", "scopes": []}


def tool_name(i: int) -> str:
    return f"delete_{i:05d}" if i % 20 == 0 else f"tool_{i:05d}"


def hints(i: int) -> dict[str, bool]:
    return {"destructiveHint": True} if i % 20 == 10 else {"readOnlyHint": True}


def visible(server: str, count: int) -> list[str]:
    """The gateway's names of the tools the policy keeps of one upstream."""
    return [f"{server}__{tool_name(i)}" for i in range(count) if i % 20 not in (0, 10)]


# --- the upstreams ----------------------------------------------------------------------


def upstream(server: int, count: int, port: int | None) -> None:
    """A FastMCP upstream of ``count`` tools, over stdio (or HTTP on ``port``)."""
    from fastmcp import FastMCP

    mcp = FastMCP(f"bench{server}")
    for i in range(count):
        def run(text: str = "", _i: int = i) -> str:
            return f"{_i} {text}"

        mcp.tool(run, name=tool_name(i), description=f"tool {i} of server {server}",
                 annotations=hints(i))
    if port is None:
        mcp.run(transport="stdio", show_banner=False, log_level="ERROR")
    else:
        mcp.run(transport="http", host="127.0.0.1", port=port, show_banner=False,
                log_level="ERROR")


def raw_upstream(server: int, count: int) -> None:
    """The same tools, answered by a few lines of JSON-RPC over stdio."""
    tools = [{"name": tool_name(i), "description": f"tool {i} of server {server}",
              "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
              "annotations": hints(i)} for i in range(count)]
    for line in sys.stdin:
        message = json.loads(line) if line.strip() else {}
        if "id" not in message or "method" not in message:
            continue
        method, params = message["method"], message.get("params") or {}
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "initialize":
            answer["result"] = {"protocolVersion": PROTOCOL, "capabilities": {"tools": {}},
                                "serverInfo": {"name": f"raw{server}", "version": "1"}}
        elif method == "tools/list":
            answer["result"] = {"tools": tools}
        elif method == "tools/call":
            answer["result"] = {"content": [{"type": "text", "text": f"ran {params['name']}"}]}
        elif method == "ping":
            answer["result"] = {}
        else:
            answer["error"] = {"code": -32601, "message": "Method not found"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


# --- raw clients ---------------------------------------------------------------------


class StdioClient:
    """A process spoken to in JSON-RPC lines; ``request`` returns the result."""

    def __init__(self, command: list[str], log: Path) -> None:
        self._log = log.open("w")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._log, env=dict(os.environ))
        self._next = 0
        self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self._next += 1
        self._send({"jsonrpc": "2.0", "id": self._next, "method": method,
                    **({"params": params} if params is not None else {})})
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError(f"{method}: the process ended")
            answer = json.loads(line)
            if answer.get("id") == self._next and "method" not in answer:
                break
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def timed_request(self, method: str) -> tuple[float, float, Any]:
        """``request`` timed in two: to the answer's last byte read, and its
        ``json.loads``; with the result."""
        self._next += 1
        start = time.perf_counter()
        self._send({"jsonrpc": "2.0", "id": self._next, "method": method})
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            read = time.perf_counter()
            if not line:
                raise RuntimeError(f"{method}: the process ended")
            answer = json.loads(line)
            parsed = time.perf_counter()
            if answer.get("id") == self._next and "method" not in answer:
                break
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return read - start, parsed - read, answer["result"]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


def _answer_of(response: Any, wanted: int) -> Any:
    """The JSON-RPC answer ``wanted`` of an HTTP response, JSON or an event stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if message.get("id") == wanted:
                    return message
        raise RuntimeError(f"no answer in the event stream: {response.text[:200]!r}")
    return response.json()


class HttpClient:
    """A streamable-HTTP MCP session by plain POSTs (sync and async)."""

    def __init__(self, url: str, token: str | None = None, *, asynchronous: bool = False
                 ) -> None:
        import httpx

        self.url = url
        self.headers = {"Accept": "application/json, text/event-stream",
                        "Content-Type": "application/json"}
        if token is not None:
            self.headers["Authorization"] = f"Bearer {token}"
        self._next = 0
        self.http: Any = (httpx.AsyncClient if asynchronous else httpx.Client)(timeout=DEADLINE)

    def _message(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        self._next += 1
        return {"jsonrpc": "2.0", "id": self._next, "method": method,
                **({"params": params} if params is not None else {})}

    def _result(self, method: str, response: Any, wanted: int) -> Any:
        if response.status_code != 200:
            raise RuntimeError(f"{method}: HTTP {response.status_code}")
        if method == "initialize":
            session = response.headers.get("mcp-session-id")
            if session:
                self.headers["mcp-session-id"] = session
            self.headers["mcp-protocol-version"] = PROTOCOL
        answer = _answer_of(response, wanted)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        message = self._message(method, params)
        response = self.http.post(self.url, json=message, headers=self.headers)
        return self._result(method, response, message["id"])

    async def arequest(self, method: str, params: dict[str, Any] | None = None) -> Any:
        message = self._message(method, params)
        response = await self.http.post(self.url, json=message, headers=self.headers)
        return self._result(method, response, message["id"])

    def start(self) -> HttpClient:
        self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.http.post(self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                       headers=self.headers)
        return self

    async def astart(self) -> HttpClient:
        await self.arequest("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                           "clientInfo": {"name": "bench", "version": "1"}})
        await self.http.post(self.url, json={"jsonrpc": "2.0",
                                             "method": "notifications/initialized"},
                             headers=self.headers)
        return self


# --- processes ------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(log: Path, pattern: str, process: subprocess.Popen[bytes]) -> re.Match[str]:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        found = re.search(pattern, log.read_text(errors="replace"))
        if found:
            return found
        if process.poll() is not None:
            raise RuntimeError(f"exited ({process.returncode}): {log.read_text()[-2000:]}")
        time.sleep(0.05)
    raise RuntimeError(f"{pattern!r} never came: {log.read_text()[-2000:]}")


@dataclass
class Setup:
    """The processes of one run, ended by :meth:`close`."""

    directory: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    clients: list[StdioClient] = field(default_factory=list)

    def upstream_command(self, k: int, tools: int, raw: bool) -> list[str]:
        mode = "--raw-upstream" if raw else "--upstream"
        return [sys.executable, SCRIPT, mode, str(k), str(tools)]

    def servers_file(self, name: str, count: int, tools: int, raw: bool) -> Path:
        servers = {f"s{k}": {"command": self.upstream_command(k, tools, raw)[0],
                             "args": self.upstream_command(k, tools, raw)[1:]}
                   for k in range(count)}
        path = self.directory / f"{name}.servers.json"
        path.write_text(json.dumps({"mcpServers": servers}))
        return path

    def _files(self) -> tuple[Path, Path]:
        policy, tokens = self.directory / "policy.toml", self.directory / "tokens.json"
        policy.write_text(POLICY)
        tokens.write_text(json.dumps(TOKENS))
        return policy, tokens

    def stdio_direct(self, k: int, tools: int, raw: bool) -> StdioClient:
        client = StdioClient(self.upstream_command(k, tools, raw),
                             self.directory / f"direct{k}.log")
        self.clients.append(client)
        return client

    def http_direct(self, k: int, tools: int) -> str:
        port = _free_port()
        log = self.directory / f"http{k}.log"
        with log.open("w") as err:
            process = subprocess.Popen([*self.upstream_command(k, tools, False), "--http",
                                        str(port)], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=err)
        self.processes.append(process)
        url = f"http://127.0.0.1:{port}/mcp"
        end = time.monotonic() + DEADLINE
        while True:  # up once it answers an initialize
            try:
                HttpClient(url).start()
                return url
            except Exception:
                if time.monotonic() > end or process.poll() is not None:
                    raise
                time.sleep(0.2)

    def stdio_gateway(self, name: str, count: int, tools: int, raw: bool) -> StdioClient:
        policy, _ = self._files()
        servers = self.servers_file(name, count, tools, raw)
        client = StdioClient([sys.executable, "-m", "toolfilter_fast", "serve", "--config",
                              str(policy), "--servers", str(servers), "--ctx", json.dumps(CTX),
                              "--start-timeout", str(DEADLINE), "--log-level", "WARNING"],
                             self.directory / f"{name}.log")
        self.clients.append(client)
        return client

    def http_gateway(self, name: str, count: int, tools: int, raw: bool) -> str:
        policy, tokens = self._files()
        servers = self.servers_file(name, count, tools, raw)
        log = self.directory / f"{name}.log"
        with log.open("w") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "toolfilter_fast", "serve", "--config", str(policy),
                 "--servers", str(servers), "--transport", "http", "--port", "0",
                 "--token-file", str(tokens), "--start-timeout", str(DEADLINE),
                 "--log-level", "WARNING"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        self.processes.append(process)
        return _wait_for(log, r"gateway ready on (http://\S+):", process)[1]

    def close(self) -> None:
        for client in self.clients:
            client.close()
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# --- measuring ------------------------------------------------------------------------


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def _timed(work: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def names_of(result: Any) -> list[str]:
    return [tool["name"] for tool in result["tools"]]


#: The rows a run can measure (``--only``): the listing and call ratios and
#: the latency table, the 10,000-tool listing, the concurrent clients.
PARTS = frozenset({"lists", "calls", "big", "concurrent"})


@dataclass
class Config:
    """The sizes of one run."""

    tools: int = 20            # tools of each upstream of the table's rows
    list_rounds: int = 200
    call_rounds: int = 200
    big_upstreams: int = 50
    big_tools: int = 200       # of each of those: 10,000 in all
    big_rounds: int = 50
    clients: int = 50
    requests: int = 20         # of each concurrent client
    many: int = 6              # the upstreams of the table's second rows
    raw: bool = False          # the table's upstreams: FastMCP servers, or raw JSON-RPC
    parts: frozenset[str] = PARTS  # the rows measured


def _pair(direct: Any, gateway: Any, rounds: int) -> tuple[list[float], list[float]]:
    """``rounds`` interleaved timings of ``direct()`` and ``gateway()``."""
    times: tuple[list[float], list[float]] = ([], [])
    for r in range(rounds):
        order = ((0, direct), (1, gateway)) if r % 2 == 0 else ((1, gateway), (0, direct))
        for which, work in order:
            times[which].append(work())
    return times


def _latency(setup: Setup, config: Config, transport: str, count: int,
             checks: dict[str, Any]) -> dict[str, Any]:
    """Direct and gateway timings of tools/list and tools/call with ``count`` upstreams."""
    name = f"{transport}{count}"
    if transport == "stdio":
        directs: list[Any] = [setup.stdio_direct(k, config.tools, config.raw)
                              for k in range(count)]
        gateway: Any = setup.stdio_gateway(name, count, config.tools, config.raw)
    else:
        if config.raw:  # the raw upstream speaks stdio only
            directs = [setup.stdio_direct(k, config.tools, True) for k in range(count)]
        else:
            directs = [HttpClient(setup.http_direct(k, config.tools)).start()
                       for k in range(count)]
        gateway = HttpClient(setup.http_gateway(name, count, config.tools, config.raw),
                             "token-0").start()
    for _ in range(3):  # warm-up: both sides have listed and called
        for client in [*directs, gateway]:
            client.request("tools/list")
    listed = names_of(gateway.request("tools/list"))
    checks[f"{name} listed"] = listed
    target = visible("s0", config.tools)[-1]
    plain = target.split("__", 1)[1]

    def direct_list() -> float:
        return max(_timed(lambda c=c: c.request("tools/list"))[0] for c in directs)

    def gateway_list() -> float:
        return _timed(lambda: gateway.request("tools/list"))[0]

    def direct_call() -> float:
        took, result = _timed(lambda: directs[0].request(
            "tools/call", {"name": plain, "arguments": {"text": "x"}}))
        assert not result.get("isError"), result
        return took

    def gateway_call() -> float:
        took, result = _timed(lambda: gateway.request(
            "tools/call", {"name": target, "arguments": {"text": "x"}}))
        assert not result.get("isError"), result
        return took

    out = {}
    if "lists" in config.parts:
        out["list"] = _pair(direct_list, gateway_list, config.list_rounds)
    if "calls" in config.parts:
        out["call"] = _pair(direct_call, gateway_call, config.call_rounds)
        hidden = gateway.request("tools/call", {"name": "s0__delete_00000", "arguments": {}})
        checks[f"{name} hidden call refused"] = bool(hidden.get("isError"))
    return out


def _big(setup: Setup, config: Config, checks: dict[str, Any]) -> dict[str, list[float]]:
    """The 10,000-tool listing: each round's time to the answer's last byte
    and its parse by the client, apart."""
    gateway = setup.stdio_gateway("big", config.big_upstreams, config.big_tools, True)
    for _ in range(3):
        gateway.request("tools/list")
    listed = names_of(gateway.request("tools/list"))
    checks["big listed"] = listed
    times: dict[str, list[float]] = {"read": [], "parse": [], "total": []}
    same = True
    for _ in range(config.big_rounds):
        # Each answer checked and let go: answers held would make every later
        # parse pay for the garbage collector's passes over them.
        read, parse, result = gateway.timed_request("tools/list")
        same = same and names_of(result) == listed
        del result
        times["read"].append(read)
        times["parse"].append(parse)
        times["total"].append(read + parse)
    checks["big answers"] = same
    return times


async def _concurrent(url: str, config: Config, checks: dict[str, Any]) -> dict[str, Any]:
    tokens = sorted(TOKENS)
    target = visible("s0", config.tools)[-1]
    times: list[float] = []
    errors: list[str] = []
    seen: dict[str, set[tuple[str, ...]]] = {token: set() for token in tokens}

    async def one(i: int) -> None:
        token = tokens[i % len(tokens)]
        client = HttpClient(url, token, asynchronous=True)
        try:
            await client.astart()
            for r in range(config.requests):
                start = time.perf_counter()
                try:
                    if r % 2 == 0:
                        seen[token].add(tuple(names_of(await client.arequest("tools/list"))))
                    else:
                        result = await client.arequest(
                            "tools/call", {"name": target, "arguments": {"text": "x"}})
                        # The caller with no scope is shown nothing: its call is refused.
                        if bool(result.get("isError")) != (token == "token-4"):
                            errors.append(f"{token}: call answered {result}")
                except Exception as err:
                    errors.append(f"{token}: {err}")
                times.append(time.perf_counter() - start)
        except Exception as err:
            errors.append(f"{token}: {err}")
        finally:
            await client.http.aclose()

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(config.clients)))
    took = time.perf_counter() - start
    checks["concurrent lists"] = {token: sorted(lists) for token, lists in seen.items()}
    return {"requests": len(times), "seconds": took, "times": times, "errors": errors}


def measure(config: Config) -> dict[str, Any]:
    checks: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        setup = Setup(Path(tmp))
        try:
            latency = {(transport, count): _latency(setup, config, transport, count, checks)
                       for transport in ("stdio", "http") for count in (1, config.many)
                       } if config.parts & {"lists", "calls"} else {}
            big = _big(setup, config, checks) if "big" in config.parts else None
            concurrent = asyncio.run(_concurrent(
                setup.http_gateway("concurrent", config.many, config.tools, config.raw), config,
                checks)) if "concurrent" in config.parts else None
        finally:
            setup.close()
    return {"latency": latency, "big": big, "concurrent": concurrent, "checks": checks}


# --- the report -----------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def rows(result: dict[str, Any], config: Config) -> list[dict[str, Any]]:
    out = []
    latency = result["latency"]
    for transport in ("stdio", "http"):
        for count in (1, config.many):
            if "lists" not in config.parts:
                break
            direct, gateway = latency[(transport, count)]["list"]
            ratio = statistics.median(gateway) / statistics.median(direct)
            out.append({"workload": f"tools/list, {count} upstream{'s' * (count > 1)} of "
                                    f"{config.tools} tools ({transport}), over the slowest "
                                    "one direct",
                        "value": f"{ratio:.2f}x", "target": "<= 1.3x",
                        "met": ratio <= 1.3})
    for transport in ("stdio", "http"):
        if "calls" not in config.parts:
            break
        direct, gateway = latency[(transport, config.many)]["call"]
        ratio = statistics.median(gateway) / statistics.median(direct)
        out.append({"workload": f"tools/call round trip, {config.many} upstreams ({transport}), "
                                "over direct", "value": f"{ratio:.2f}x", "target": "<= 1.2x",
                    "met": ratio <= 1.2})
    if result["big"] is not None:
        out += _big_rows(result["big"], config)
    concurrent = result["concurrent"]
    if concurrent is None:
        return out
    errors = len(concurrent["errors"])
    out.append({"workload": f"{config.clients} concurrent HTTP clients, {len(TOKENS)} tokens, "
                            f"{concurrent['requests']:,} requests (lists and calls, "
                            f"{config.many} upstreams): {concurrent['requests'] / concurrent['seconds']:,.0f}"
                            f" requests/s, p99 {_ms(_p99(concurrent['times']))}",
                "value": f"{errors} errors", "target": "0 errors", "met": errors == 0})
    return out


def _big_rows(big: dict[str, list[float]], config: Config) -> list[dict[str, Any]]:
    total = config.big_upstreams * config.big_tools
    what = f"tools/list of {total:,} tools over {config.big_upstreams} upstreams (stdio), after warm-up"
    read, whole = statistics.median(big["read"]), statistics.median(big["total"])
    return [{"workload": f"{what}, to the answer's last byte, p50 (p99 {_ms(_p99(big['read']))})",
             "value": _ms(read), "target": "< 20 ms", "met": read < 0.020},
            {"workload": f"{what}, read and parsed by the client (json.loads: p50 "
                         f"{_ms(statistics.median(big['parse']))}), p50 (p99 "
                         f"{_ms(_p99(big['total']))})",
             "value": _ms(whole), "target": "< 20 ms", "met": whole < 0.020}]


def render(result: dict[str, Any], config: Config) -> str:
    lines = ["| workload | measured | target | met |", "| --- | --- | --- | --- |"]
    for row in rows(result, config):
        lines.append(f"| {row['workload']} | {row['value']} | {row['target']} | "
                     f"{'met' if row['met'] else 'missed'} |")
    if result["latency"]:
        lines += ["", "Latency (direct: each upstream listed, the slowest one's time per round; "
                  "a call to one upstream):", "",
                  "| transport | upstreams | request | direct median | direct p99 | gateway "
                  "median | gateway p99 | rounds |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (transport, count), timings in result["latency"].items():
        for request in ("list", "call"):
            if request not in timings:
                continue
            direct, gateway = timings[request]
            lines.append(f"| {transport} | {count} | tools/{request} | "
                         f"{_ms(statistics.median(direct))} | {_ms(_p99(direct))} | "
                         f"{_ms(statistics.median(gateway))} | {_ms(_p99(gateway))} | "
                         f"{len(gateway)} |")
    load = os.getloadavg()
    lines += ["", f"Load average {load[0]:.2f} (1 min), {load[2]:.2f} (15 min) at the end; "
              f"upstreams: {'raw JSON-RPC' if config.raw else 'FastMCP'} servers."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--only", type=_parts, default=PARTS, metavar="PART,...",
                        help=f"measure only these rows: {', '.join(sorted(PARTS))}")
    parser.add_argument("--upstream", nargs=2, type=int, metavar=("K", "N"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--raw-upstream", nargs=2, type=int, metavar=("K", "N"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--http", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.upstream:
        upstream(*args.upstream, args.http)
        return 0
    if args.raw_upstream:
        raw_upstream(*args.raw_upstream)
        return 0
    config = Config(list_rounds=40, call_rounds=40, big_rounds=20) if args.quick else Config()
    config.parts = args.only
    result = measure(config)
    from importlib.metadata import version

    print(f"fastmcp {version('fastmcp')}, mcp {version('mcp')}, "
          f"Python {sys.version.split()[0]}\n")
    print(render(result, config))
    problems = check(result, config)
    for problem in problems:
        print(f"wrong answer: {problem}", file=sys.stderr)
    return 1 if problems else 0


def _parts(text: str) -> frozenset[str]:
    parts = frozenset(part.strip() for part in text.split(","))
    unknown = parts - PARTS
    if unknown or not parts:
        raise argparse.ArgumentTypeError(f"{text!r}: expected some of {', '.join(sorted(PARTS))}")
    return parts


def check(result: dict[str, Any], config: Config) -> list[str]:
    """What the gateway answered wrong during the run (the timings aside)."""
    checks = result["checks"]
    problems = []
    for transport in ("stdio", "http"):
        for count in (1, config.many):
            if not config.parts & {"lists", "calls"}:
                break
            expected = [n for k in range(count) for n in visible(f"s{k}", config.tools)]
            listed = checks[f"{transport}{count} listed"]
            if listed != expected:  # servers in the file's order, each one's by name
                problems.append(f"{transport} with {count}: listed {listed}")
            if "calls" in config.parts and not checks[f"{transport}{count} hidden call refused"]:
                problems.append(f"{transport} with {count}: a hidden tool was called")
    big = [n for k in range(config.big_upstreams) for n in visible(f"s{k}", config.big_tools)]
    if "big" in config.parts and checks["big listed"] != big:
        problems.append(f"the big listing: {len(checks['big listed'])} tools")
    if "big" in config.parts and not checks["big answers"]:
        problems.append("the big listing: a timed answer differed from the first")
    if "concurrent" not in config.parts:
        return problems
    users = [n for k in range(config.many) for n in visible(f"s{k}", config.tools)]
    wanted = {token: [tuple(users)] if TOKENS[token]["scopes"] else [()] for token in TOKENS}
    if checks["concurrent lists"] != wanted:
        problems.append(f"the concurrent lists: {checks['concurrent lists']}")
    problems += result["concurrent"]["errors"][:5]
    return problems


def test_gateway_bench_runs_and_answers_right():
    pytest.importorskip("fastmcp", reason="needs the gateway extra")
    config = Config(tools=20, list_rounds=2, call_rounds=2, big_upstreams=3, big_tools=100,
                    big_rounds=2, clients=5, requests=2, many=2, raw=True)
    result = measure(config)
    assert check(result, config) == []
    assert [row["target"] for row in rows(result, config)] == \
        ["<= 1.3x"] * 4 + ["<= 1.2x"] * 2 + ["< 20 ms"] * 2 + ["0 errors"]
    assert "| stdio | 2 | tools/list |" in render(result, config)
    with pytest.raises(SystemExit):
        main(["--only", "big,nothing"])


def test_a_run_of_some_rows_measures_and_checks_those_only():
    pytest.importorskip("fastmcp", reason="needs the gateway extra")
    config = Config(tools=5, list_rounds=2, big_upstreams=2, big_tools=40, big_rounds=2,
                    many=2, raw=True, parts=frozenset({"big", "lists"}))
    result = measure(config)
    assert check(result, config) == []
    assert [row["target"] for row in rows(result, config)] == ["<= 1.3x"] * 4 + ["< 20 ms"] * 2
    assert result["concurrent"] is None and "tools/call" not in render(result, config)


if __name__ == "__main__":
    sys.exit(main())
