"""``tools/call`` through the gateway (``toolfilter serve`` as a process, real
FastMCP upstreams as processes): the upstream's result comes back as the
upstream gave it, calls in flight on one upstream each get their own answer,
a call the client cancels is cancelled upstream, progress comes back, an
upstream that ends in the middle of a call gives an error while the
gateway goes on, and a hidden tool is unknown and never runs."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

fastmcp = pytest.importorskip("fastmcp", reason="needs the gateway extra")

from _gateway import DEADLINE, serve_http, stdio_gateway, write_files  # noqa: E402
from _gateway_call_upstream import PNG, SCRIPT  # noqa: E402
from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StdioTransport  # noqa: E402
from mcp_types import SERVER_INFO_META_KEY  # noqa: E402

POLICY = '[filter]\nexclude = ["*/delete_*"]\n'


def setup(directory: Path) -> dict[str, Path]:
    servers = {name: {"command": sys.executable,
                      "args": [SCRIPT, name, str(directory / f"{name}.record")]}
               for name in ("one", "two")}
    return write_files(directory, servers, POLICY)


def ran(directory: Path, name: str) -> list[str]:
    path = directory / f"{name}.record"
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def direct(directory: Path, name: str, mode: str) -> Client:
    transport = StdioTransport(sys.executable, [SCRIPT, name, str(directory / "direct.record")],
                               keep_alive=False, env=dict(os.environ))
    return Client(transport, timeout=DEADLINE, init_timeout=DEADLINE, mode=mode)


def wire(result) -> dict:
    """A call's result as the client got it, but the server's own stamp."""
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    meta = {k: v for k, v in dumped.pop("_meta", {}).items() if k != SERVER_INFO_META_KEY}
    return {**dumped, **({"_meta": meta} if meta else {})}


CALLS = [("echo", {"text": "hi"}), ("square", {"n": 7}), ("refuse", {"text": "that"}),
         ("picture", {}), ("with_meta", {"text": "said"})]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_result_comes_back_as_the_upstream_gave_it(tmp_path, mode):
    paths = setup(tmp_path)

    async def main():
        answers = {}
        async with direct(tmp_path, "one", mode) as upstream:
            answers["direct"] = [await upstream.call_tool_mcp(tool, args) for tool, args in CALLS]
        gateway = stdio_gateway(paths, tmp_path / "serve.log")
        gateway.mode = mode
        async with gateway:
            answers["gateway"] = [await gateway.call_tool_mcp(f"one__{tool}", args)
                                  for tool, args in CALLS]
        return answers

    answers = asyncio.run(main())
    assert [wire(r) for r in answers["gateway"]] == [wire(r) for r in answers["direct"]]
    echo, square, refuse, picture, with_meta = answers["gateway"]
    assert echo.content[0].text == "one hi" and echo.is_error is False
    assert square.structured_content == {"n": 7, "square": 49}
    assert refuse.is_error is True and "one refuses 'that'" in refuse.content[0].text
    assert picture.content[0].type == "image" and picture.content[0].mime_type == "image/png"
    import base64
    assert base64.b64decode(picture.content[0].data) == PNG
    assert with_meta.meta["trace"] == "one-1" and with_meta.structured_content == {"said": "said"}
    # The upstream's serverInfo is not the gateway's: it never comes through.
    for result in answers["gateway"]:
        stamp = (result.meta or {}).get(SERVER_INFO_META_KEY)
        assert stamp is None or stamp["name"] == "toolfilter gateway"
    assert ran(tmp_path, "one") == [tool for tool, _ in CALLS]


def test_calls_in_flight_on_one_upstream_each_get_their_own_answer(tmp_path):
    paths = setup(tmp_path)
    texts = [f"call {i}" for i in range(24)]

    async def main():
        async with stdio_gateway(paths, tmp_path / "serve.log") as gateway:
            # The first sent sleeps longest: the answers come back out of order.
            return await asyncio.gather(*(gateway.call_tool_mcp(
                "one__slow_echo", {"text": text, "delay": (len(texts) - i) * 0.02})
                for i, text in enumerate(texts)))

    results = asyncio.run(main())
    assert [r.content[0].text for r in results] == texts
    assert all(r.is_error is False for r in results)
    assert ran(tmp_path, "one") == ["slow_echo"] * len(texts)


def test_a_call_the_client_cancels_is_cancelled_upstream(tmp_path):
    paths = setup(tmp_path)

    async def main():
        async with stdio_gateway(paths, tmp_path / "serve.log") as gateway:
            call = asyncio.ensure_future(gateway.call_tool_mcp(
                "one__slow_echo", {"text": "never", "delay": DEADLINE}))
            await wait_until(lambda: ran(tmp_path, "one") == ["slow_echo"])
            call.cancel()
            await wait_until(lambda: "cancelled" in ran(tmp_path, "one"))
            return call.cancelled(), await gateway.call_tool_mcp("one__echo", {"text": "next"})

    cancelled, after = asyncio.run(main())
    assert cancelled
    assert ran(tmp_path, "one") == ["slow_echo", "cancelled", "echo"]
    assert after.content[0].text == "one next"


async def wait_until(done) -> None:
    end = asyncio.get_running_loop().time() + DEADLINE
    while not done():
        assert asyncio.get_running_loop().time() < end, "it never came"
        await asyncio.sleep(0.02)


def test_the_upstreams_progress_reaches_the_caller_over_stdio_and_http(tmp_path):
    paths = setup(tmp_path)
    seen: dict[str, list] = {"stdio": [], "http": []}

    async def call(client, transport):
        async def progress(done, total, message):
            seen[transport].append((done, total, message))

        return await client.call_tool_mcp("two__steps", {}, progress_handler=progress)

    async def over_stdio():
        async with stdio_gateway(paths, tmp_path / "serve.log") as gateway:
            return await call(gateway, "stdio")

    results = [asyncio.run(over_stdio())]
    served = serve_http(tmp_path)
    try:
        async def over_http():
            async with Client(served.url, auth="token-bob", timeout=DEADLINE) as client:
                return await call(client, "http")

        results.append(asyncio.run(over_http()))
    finally:
        served.stop()
    assert [result.content[0].text for result in results] == ["three steps"] * 2
    steps = [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    assert seen == {"stdio": steps, "http": steps}


def test_an_upstream_that_ends_mid_call_gives_an_error_and_the_gateway_goes_on(tmp_path):
    paths = setup(tmp_path)
    log = tmp_path / "serve.log"

    async def main():
        async with stdio_gateway(paths, log) as gateway:
            died = await asyncio.wait_for(gateway.call_tool_mcp("one__die", {}), DEADLINE)
            after = await gateway.call_tool_mcp("one__echo", {"text": "again"})
            other = await gateway.call_tool_mcp("two__echo", {"text": "still"})
            listed = [tool.name for tool in await gateway.list_tools()]
            return died, after, other, listed

    died, after, other, listed = asyncio.run(main())
    assert died.is_error is True and died.content[0].text.startswith(
        "Error calling tool 'one__die': upstream 'one' is down: its process has exited")
    assert after.is_error is True  # its tools are gone: unknown now
    assert other.is_error is False and other.content[0].text == "two still"
    assert listed and all(name.startswith("two__") for name in listed)
    assert "upstream 'one' (" in log.read_text() and "is down: its process has exited" in \
        log.read_text()
    assert "Traceback" not in log.read_text()


def test_a_hidden_tool_is_unknown_and_never_runs_over_stdio_and_http(tmp_path):
    paths = setup(tmp_path)

    async def calls(client):
        return [await client.call_tool_mcp(name, {}) for name in
                ("one__delete_all", "one__no_such_tool", "one__picture")]

    async def over_stdio():
        async with stdio_gateway(paths, tmp_path / "serve.log") as gateway:
            return await calls(gateway)

    answers = [asyncio.run(over_stdio())]
    served = serve_http(tmp_path)
    try:
        async def over_http():
            async with Client(served.url, auth="token-bob", timeout=DEADLINE) as client:
                return await calls(client)

        answers.append(asyncio.run(over_http()))
    finally:
        served.stop()
    for hidden, unknown, shown in answers:
        assert hidden.is_error is True and unknown.is_error is True
        assert hidden.content[0].text == "Unknown tool: 'one__delete_all'"
        assert unknown.content[0].text == "Unknown tool: 'one__no_such_tool'"
        assert shown.is_error is False and shown.content[0].type == "image"
    assert "delete_all" not in ran(tmp_path, "one")
    assert ran(tmp_path, "one") == ["picture", "picture"]


def test_an_http_upstream_is_called_through_fastmcps_proxy_judged_once(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    upstream = subprocess.Popen([sys.executable, SCRIPT, "web", str(tmp_path / "web.record"),
                                 str(port)], stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + DEADLINE
        while True:  # up once it takes a connection
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < end and upstream.poll() is None
                time.sleep(0.1)
        paths = write_files(tmp_path, {"web": {"url": f"http://127.0.0.1:{port}/mcp"}}, POLICY)
        audit = tmp_path / "audit.jsonl"

        async def main():
            async with stdio_gateway(paths, tmp_path / "serve.log", "--audit-log",
                                     str(audit)) as gateway:
                return (await gateway.call_tool_mcp("web__square", {"n": 3}),
                        await gateway.call_tool_mcp("web__delete_all", {}))

        square, hidden = asyncio.run(main())
    finally:
        upstream.terminate()
        upstream.wait(timeout=DEADLINE)
    assert square.is_error is False and square.structured_content == {"n": 3, "square": 9}
    assert hidden.is_error is True and hidden.content[0].text == "Unknown tool: 'web__delete_all'"
    assert ran(tmp_path, "web") == ["square"]
    events = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert [(e["name"], e["stage"]) for e in events if e["event"] == "hidden"] == \
        [("web__delete_all", "visibility")]
