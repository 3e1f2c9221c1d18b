"""Several gateways behind one address (issue 32, section 5): two ``toolfilter
serve --transport http --stateless`` processes read one policy file, and one
client's requests go to them in turn, as a load balancer without sticky
sessions sends them.

The "load balancer" is a transport of the client's own HTTP library
(:class:`RoundRobin`): each request goes to the next gateway's port, so one MCP
session alternates between the two processes request by request. Both eras
of the protocol are tried: the 2026 one (FastMCP's client by default, which
has no session) and the 2025 handshake (``mode="legacy"``: ``initialize``, then
a session id on every request), which only a stateless gateway can serve
from two processes.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

fastmcp = pytest.importorskip("fastmcp", reason="needs the gateway extra")

import httpx2  # noqa: E402  (the MCP SDK's HTTP client, which fastmcp brings)
from _gateway import ADMIN, DEADLINE, USER, Served, write_setup  # noqa: E402
from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StreamableHttpTransport  # noqa: E402
from test_mcp_roundtrip import failure  # noqa: E402


class RoundRobin(httpx2.AsyncBaseTransport):
    """Sends each request to the next of ``ports`` on 127.0.0.1 (its Host
    header made anew), and records ``(port, what)``: the JSON-RPC method, or
    the HTTP method of a request without one."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.sent: list[tuple[int, str]] = []
        self.inner = httpx2.AsyncHTTPTransport(trust_env=False)

    async def handle_async_request(self, request):
        port = self.ports[len(self.sent) % len(self.ports)]
        body = await request.aread()
        try:
            what = json.loads(body)["method"]
        except (ValueError, KeyError, TypeError):
            what = request.method
        self.sent.append((port, what))
        headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"host"]
        forwarded = httpx2.Request(request.method, request.url.copy_with(port=port),
                                   headers=headers, content=body,
                                   extensions=request.extensions)
        return await self.inner.handle_async_request(forwarded)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def served(self, method: str) -> set[int]:
        """The ports that got a request of ``method``."""
        return {port for port, what in self.sent if what == method}


def balanced_client(balancer: RoundRobin, url: str, token: str, mode: str) -> Client:
    def factory(headers=None, timeout=None, auth=None, **more):
        return httpx2.AsyncClient(headers=headers, auth=auth, transport=balancer,
                                  timeout=timeout or httpx2.Timeout(DEADLINE), **more)

    transport = StreamableHttpTransport(url, auth=token, httpx_client_factory=factory)
    return Client(transport, timeout=DEADLINE, init_timeout=DEADLINE, mode=mode)


def start(paths: dict[str, Path], log: Path, *extra: str) -> Served:
    with log.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolfilter_fast", "serve", "--config", str(paths["policy"]),
             "--servers", str(paths["servers"]), "--transport", "http", "--port", "0",
             "--token-file", str(paths["tokens"]), *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    return Served(process, log, "")


@pytest.fixture
def two_gateways(tmp_path, request):
    """Two gateways on one policy file (``tmp_path/policy.toml``), started at
    once, each with its own upstreams' processes. ``request.param``: the extra
    flags of both."""
    paths = write_setup(tmp_path)
    started: list[Served] = []
    try:
        for number in (1, 2):
            started.append(start(paths, tmp_path / f"serve{number}.log", *request.param))
        for served in started:
            served.url = served.wait_for(r"gateway ready on (http://\S+):")[1]
        yield paths, started
    finally:
        for served in started:
            served.stop()


def port(served: Served) -> int:
    found = re.search(r":(\d+)/mcp$", served.url)
    assert found, served.url
    return int(found[1])


async def listings(client: Client, times: int) -> list[list[str]]:
    return [[tool.name for tool in await client.list_tools()] for _ in range(times)]


@pytest.mark.parametrize("two_gateways", [["--stateless", "--page-size", "2"]], indirect=True)
def test_two_stateless_gateways_behind_one_address_list_alike_and_reload_alike(two_gateways):
    """Lists come in pages of 2 (3 tools: 2 pages), so each listing's second
    page is asked, with the first page's cursor, of the other gateway."""
    paths, (first, second) = two_gateways
    ports = [port(first), port(second)]

    async def session(token: str, mode: str, times: int = 4):
        balancer = RoundRobin(ports)
        async with balanced_client(balancer, first.url, token, mode) as client:
            listed = await listings(client, times)
            if token == "token-alice":  # her scope shows beta__admin_purge
                return balancer, listed, [], [], None
            calls = [await client.call_tool_mcp("alpha__read_file", {"text": str(n)})
                     for n in range(2)]
            hidden = [await failure(client, "beta__admin_purge", {}) for _ in range(2)]
            unknown = await failure(client, "beta__never_existed", {})
        return balancer, listed, calls, hidden, unknown

    for mode in ("legacy", "auto"):
        balancer, listed, calls, hidden, unknown = asyncio.run(session("token-bob", mode))
        # One session, its requests spread over both processes, the same answers.
        assert balancer.served("tools/list") == set(ports), balancer.sent
        assert balancer.served("tools/call") == set(ports), balancer.sent
        pages = [port for port, what in balancer.sent if what == "tools/list"]
        assert len(pages) == 8 and all(a != b for a, b in itertools.pairwise(pages)), pages
        assert listed == [USER] * 4
        assert [c.is_error for c in calls] == [False, False]
        assert [c.content[0].text for c in calls] == ["alpha read_file 0", "alpha read_file 1"]
        assert hidden == [unknown, unknown]
        assert unknown[1] == "Unknown tool: NAME"
        assert asyncio.run(session("token-alice", mode, times=2))[1] == [ADMIN] * 2

    # One edit of the one file: each instance sees it on its own (each looks at
    # the file every second) and reloads; then both list the new policy.
    marks = [len(first.text()), len(second.text())]
    paths["policy"].write_text(
        '[filter]\ninclude = ["alpha/read_*", "beta/*"]\nexclude = ["*/admin_*"]\n',
        encoding="utf-8")
    for served, mark in zip((first, second), marks, strict=True):
        served.wait_for(r"policy \S+ reloaded \(the file changed\)", mark)
    balancer, listed, _, hidden, unknown = asyncio.run(session("token-bob", "legacy"))
    assert balancer.served("tools/list") == set(ports)
    assert listed == [["alpha__read_file", "beta__fetch_page", "beta__search_docs"]] * 4
    assert hidden == [unknown, unknown]


@pytest.mark.parametrize("two_gateways", [[]], indirect=True)
def test_without_stateless_a_handshake_session_cannot_move_between_gateways(two_gateways):
    """Why ``--stateless`` is needed behind a balancer: a stateful gateway knows
    only the sessions it opened, so the second process refuses the first one's
    session id (a client of the 2026 era, which has no session, is served)."""
    _, (first, second) = two_gateways
    ports = [port(first), port(second)]

    async def session(mode: str):
        async with balanced_client(RoundRobin(ports), first.url, "token-bob", mode) as client:
            return await listings(client, 2)

    with pytest.raises(Exception, match="Session not found"):
        asyncio.run(session("legacy"))
    assert asyncio.run(session("auto")) == [USER] * 2


def test_stateless_is_refused_over_stdio(tmp_path):
    paths = write_setup(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "toolfilter_fast", "serve", "--config", str(paths["policy"]),
         "--servers", str(paths["servers"]), "--stateless"],
        capture_output=True, text=True, timeout=DEADLINE, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert "--stateless is for --transport http" in done.stderr
