"""End to end: ``toolfilter serve`` as a real process over two real stdio MCP
servers (``_gateway_upstream.py``), talked to by FastMCP's real client, over
stdio and over HTTP on 127.0.0.1 (a port the system picks).

Per-user lists from two bearer tokens, a hidden call answered exactly as an
unknown name, a killed upstream, a policy reload, a bad token, and a clean
stop with no process left behind.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time

import pytest

fastmcp = pytest.importorskip("fastmcp", reason="needs the gateway extra")

from _gateway import (  # noqa: E402
    ADMIN,
    DEADLINE,
    USER,
    alive,
    serve_http,
    upstream_pids,
    write_setup,
)
from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StdioTransport  # noqa: E402
from test_mcp_roundtrip import failure  # noqa: E402  (the same comparison as the adapter's)


async def names(client):
    return [tool.name for tool in await client.list_tools()]


def stdio_client(paths, tmp_path, *extra):
    transport = StdioTransport(
        sys.executable,
        ["-m", "toolfilter_fast", "serve", "--config", str(paths["policy"]),
         "--servers", str(paths["servers"]), *extra],
        keep_alive=False, log_file=tmp_path / "serve.log", env=dict(os.environ),
    )
    return Client(transport, timeout=DEADLINE, init_timeout=DEADLINE)


def assert_all_gone(tmp_path):
    pids = upstream_pids(tmp_path)
    assert set(pids) == {"alpha", "beta"}
    end = time.monotonic() + DEADLINE
    while any(alive(pid) for pid in pids.values()) and time.monotonic() < end:
        time.sleep(0.05)
    assert [name for name, pid in pids.items() if alive(pid)] == []


# --- stdio -------------------------------------------------------------------------


def test_stdio_lists_the_policy_for_the_given_ctx_and_hides_calls_as_unknown(tmp_path):
    paths = write_setup(tmp_path)

    async def main():
        async with stdio_client(paths, tmp_path, "--ctx", '{"scopes": ["user"]}') as client:
            listed = await names(client)
            ran = await client.call_tool("alpha__read_file", {"text": "x"})
            hidden = await failure(client, "beta__admin_purge", {})
            destructive = await failure(client, "alpha__delete_repo", {"text": "r"})
            unknown = await failure(client, "beta__never_existed", {})
            no_server = await failure(client, "gamma__read_file", {"text": "r"})
            return listed, ran.data, hidden, destructive, unknown, no_server

    listed, ran, hidden, destructive, unknown, no_server = asyncio.run(main())
    assert listed == USER
    assert ran == "alpha read_file x"
    assert hidden == unknown == destructive == no_server
    error_type, message, _ = unknown
    assert error_type is fastmcp.exceptions.ToolError
    assert message == "Unknown tool: NAME"
    log = (tmp_path / "serve.log").read_text()
    assert "hidden tool called: client -, tool 'beta__admin_purge', stage visibility" in log
    assert "'text': 'r'" not in log and '"r"' not in log  # never the arguments
    assert "beta__never_existed" not in log
    assert_all_gone(tmp_path)


def test_stdio_admin_ctx_sees_more_and_the_list_order_is_fixed(tmp_path):
    paths = write_setup(tmp_path)

    async def main():
        async with stdio_client(paths, tmp_path, "--ctx", '{"scopes": ["admin"]}') as client:
            first = await names(client)
            again = await names(client)
            result = await client.call_tool("beta__admin_purge", {})
            return first, again, result.data

    first, again, data = asyncio.run(main())
    # Servers in the file's order, each one's tools by name, whatever order it lists them in.
    assert first == again == ADMIN
    assert data == "beta admin_purge"
    assert_all_gone(tmp_path)


def test_stdio_stops_on_sigint_and_reaps_its_upstreams(tmp_path):
    import subprocess

    paths = write_setup(tmp_path)
    with (tmp_path / "serve.log").open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolfilter_fast", "serve", "--config", str(paths["policy"]),
             "--servers", str(paths["servers"])],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err)
    try:
        end = time.monotonic() + DEADLINE
        while "gateway ready" not in (tmp_path / "serve.log").read_text() \
                and time.monotonic() < end and process.poll() is None:
            time.sleep(0.05)
        assert "gateway ready on stdio: 2 of 2 upstreams up" in (tmp_path / "serve.log").read_text()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=DEADLINE) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
    assert "stopped by SIGINT" in (tmp_path / "serve.log").read_text()
    assert_all_gone(tmp_path)


# --- HTTP --------------------------------------------------------------------------


@pytest.fixture
def http_gateway(tmp_path):
    served = serve_http(tmp_path)
    try:
        yield served
    finally:
        served.stop()


def test_http_lists_per_user_from_the_bearer_token(http_gateway):
    async def session(token):
        async with Client(http_gateway.url, auth=token, timeout=DEADLINE) as client:
            listed = await names(client)
            purge = await client.call_tool_mcp("beta__admin_purge", {})
            return listed, purge

    async def main():
        return await session("token-alice"), await session("token-bob")

    (alice, alice_purge), (bob, bob_purge) = asyncio.run(main())
    assert alice == ADMIN
    assert bob == USER
    assert alice_purge.is_error is False and alice_purge.content[0].text == "beta admin_purge"
    assert bob_purge.is_error is True
    assert "hidden tool called: client 'bob', tool 'beta__admin_purge', stage visibility" \
        in http_gateway.text()


def test_http_hidden_call_is_answered_as_an_unknown_name(http_gateway):
    async def main():
        async with Client(http_gateway.url, auth="token-bob", timeout=DEADLINE) as client:
            hidden = await failure(client, "alpha__admin_reset", {})
            destructive = await failure(client, "alpha__delete_repo", {"text": "r"})
            unknown = await failure(client, "alpha__never_existed", {})
            unprefixed = await failure(client, "admin_reset", {})
        async with Client(http_gateway.url, auth="token-alice", timeout=DEADLINE) as client:
            unknown_for_alice = await failure(client, "alpha__never_existed", {})
        return hidden, destructive, unknown, unprefixed, unknown_for_alice

    hidden, destructive, unknown, unprefixed, unknown_for_alice = asyncio.run(main())
    assert hidden == destructive == unknown == unprefixed == unknown_for_alice
    assert unknown[0] is fastmcp.exceptions.ToolError and unknown[1] == "Unknown tool: NAME"


def test_http_a_bad_token_is_rejected_and_sees_nothing(http_gateway):
    listed = []

    async def main(auth):
        async with Client(http_gateway.url, auth=auth, timeout=DEADLINE) as client:
            listed.extend(await names(client))

    for auth in ("token-mallory", None):
        with pytest.raises(Exception) as raised:
            asyncio.run(main(auth))
        assert "401" in repr(raised.value) or "error response" in str(raised.value)
    assert listed == []


def test_http_upstream_killed_then_reload_then_clean_stop(tmp_path):
    served = serve_http(tmp_path)
    try:
        pids = upstream_pids(tmp_path)

        async def listing(token="token-alice"):
            async with Client(served.url, auth=token, timeout=DEADLINE) as client:
                return await names(client), await client.call_tool_mcp("alpha__read_file", {})

        assert asyncio.run(listing())[0] == ADMIN
        os.kill(pids["beta"], signal.SIGKILL)
        end = time.monotonic() + DEADLINE
        while alive(pids["beta"]) and time.monotonic() < end:
            time.sleep(0.05)
        # Its tools are gone, the other upstream goes on, a log line says why.
        listed, call = asyncio.run(listing())
        assert listed == [name for name in ADMIN if name.startswith("alpha__")]
        assert call.is_error is False and call.content[0].text == "alpha read_file"
        served.wait_for(r"upstream 'beta' \(.*\) is down: its process has exited")
        assert served.process.poll() is None

        # A reload starts the dead upstream again; a bad policy file is logged,
        # and the policy in force stays.
        mark = len(served.text())
        (tmp_path / "policy.toml").write_text("[filter\ninclude = 3\n")
        served.process.send_signal(signal.SIGHUP)
        served.wait_for(r"not reloaded \(SIGHUP\).*the policy in force stays", mark)
        served.wait_for(r"upstream 'beta' \(.*\): 3 tools", mark)
        assert asyncio.run(listing("token-bob"))[0] == USER

        # A good one takes over: the file's change is seen, no signal needed.
        mark = len(served.text())
        (tmp_path / "policy.toml").write_text(
            '[filter]\ninclude = ["alpha/read_*", "beta/*"]\nexclude = ["*/admin_*"]\n')
        served.wait_for(r"reloaded \(the file changed\)", mark)
        assert asyncio.run(listing("token-bob"))[0] == [
            "alpha__read_file", "beta__fetch_page", "beta__search_docs"]
        pids = upstream_pids(tmp_path)
        assert alive(pids["beta"])
    finally:
        code = served.stop(signal.SIGTERM)
    assert code == 0
    assert "stopped by SIGTERM" in served.text()
    assert "Traceback" not in served.text()
    assert_all_gone(tmp_path)
