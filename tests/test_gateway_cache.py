"""The gateway's cache of its upstreams' lists, against real upstream processes
(``_gateway_raw_upstream.py``, which counts the ``tools/list`` it answers):
a list is read once and served from memory; a change notice, the TTL, a
reload and an upstream going down each make the gateway read it again (or
drop it); a hidden tool stays hidden through the cache on every path; and
per-caller lists come out of the one cached catalog.

Where a test waits for the gateway to see a change, it polls up to the
tests' deadline: it checks what the gateway shows, never how soon.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import pytest

fastmcp = pytest.importorskip("fastmcp", reason="needs the gateway extra")

from _gateway import DEADLINE, change_tools, ran, raw_setup, serve_http  # noqa: E402
from fastmcp import Client  # noqa: E402
from test_gateway_hardening import DESTROY, READ, tool  # noqa: E402
from test_gateway_surface import call_text, gateway, names_of  # noqa: E402

POLICY = '[filter]\nexclude = ["*/delete_*", {annotations = {destructiveHint = true}}]\n'


def asked(directory, name):
    """How many ``tools/list`` the raw upstream ``name`` has answered."""
    path = directory / f"{name}.lists"
    return len(path.read_text().splitlines()) if path.exists() else 0


def spec_of(directory, name, tools, **more):
    return {"tools": tools, "reread": True, "lists": str(directory / f"{name}.lists"), **more}


def rewrite(directory, name, tools):
    """The raw upstream's tools changed in its spec file, no notice sent (``silent``)."""
    path = directory / f"{name}.spec.json"
    spec = json.loads(path.read_text())
    spec["tools"] = tools
    path.write_text(json.dumps(spec))


def reload_by_sighup(client, log):
    """SIGHUP to the gateway, and a wait for its log to say it reloaded."""
    mark = len(log.read_text())
    client.process.send_signal(signal.SIGHUP)
    end = time.monotonic() + DEADLINE
    while "reloaded (SIGHUP)" not in log.read_text()[mark:] and time.monotonic() < end:
        time.sleep(0.05)


def until(listing, wanted):
    """Lists (``listing()``) until the answer is ``wanted``; the last answer."""
    end = time.monotonic() + DEADLINE
    while True:
        found = listing()
        if found == wanted or time.monotonic() > end:
            return found
        time.sleep(0.05)


def descriptions(result):
    return {item["name"]: item.get("description") for item in result["tools"]}


def test_a_change_notice_shows_the_new_list_without_waiting_for_the_ttl(tmp_path):
    tools = [tool("read_a", READ, "reads a"), tool("write_b", {"destructiveHint": False}, "writes b")]
    paths = raw_setup(tmp_path, {"raw": spec_of(tmp_path, "raw", tools)}, POLICY)
    with gateway(paths, tmp_path, "--list-ttl", "3600") as client:
        client.initialize()
        first = client.request("tools/list")
        second = client.request("tools/list")
        cached_calls = call_text(client, "raw__read_a")
        asked_before = asked(tmp_path, "raw")
        # The description of read_a changes, write_b goes, two tools come: one
        # the policy hides by name, one by its annotations.
        change_tools(tmp_path, "raw", [tool("read_a", READ, "reads a, poisoned"),
                                       tool("delete_all", READ, "new"),
                                       tool("wipe", DESTROY, "new"),
                                       tool("search", READ, "new")], tmp_path / "serve.log")
        after = client.request("tools/list")
        again = client.request("tools/list")
        hidden = [call_text(client, name) for name in ("raw__delete_all", "raw__wipe",
                                                       "raw__write_b")]
        never = call_text(client, "raw__never_was")
        search = call_text(client, "raw__search")
    assert names_of(first) == names_of(second) == ["raw__read_a", "raw__write_b"]
    assert cached_calls == (False, "ran read_a")
    # Read at start-up, then served from the cache until the notice.
    assert asked_before == 1
    assert asked(tmp_path, "raw") == 2
    assert names_of(after) == names_of(again) == ["raw__read_a", "raw__search"]
    assert descriptions(after)["raw__read_a"] == "reads a, poisoned"
    assert [text.replace(name, "NAME") for (_, text), name in zip(
        hidden, ("raw__delete_all", "raw__wipe", "raw__write_b"), strict=True)] == \
        [never[1].replace("raw__never_was", "NAME")] * 3
    assert all(is_error for is_error, _ in hidden)
    assert search == (False, "ran search")
    assert ran(tmp_path, "raw") == [("tools/call", "read_a"), ("tools/call", "search")]


def test_without_a_notice_the_list_is_read_again_past_the_ttl(tmp_path):
    paths = raw_setup(tmp_path, {"raw": spec_of(tmp_path, "raw", [tool("read_a", READ)],
                                                silent=True)}, POLICY)
    with gateway(paths, tmp_path, "--list-ttl", "0.2") as client:
        client.initialize()
        before = names_of(client.request("tools/list"))
        rewrite(tmp_path, "raw", [tool("read_a", READ), tool("delete_x", READ),
                                  tool("read_b", READ)])
        after = until(lambda: names_of(client.request("tools/list")),
                      ["raw__read_a", "raw__read_b"])
        hidden = call_text(client, "raw__delete_x")
    assert before == ["raw__read_a"]
    assert after == ["raw__read_a", "raw__read_b"]
    assert hidden[0] is True
    assert ran(tmp_path, "raw") == []


def test_a_reload_reads_the_lists_again_and_the_cache_holds_until_then(tmp_path):
    paths = raw_setup(tmp_path, {"raw": spec_of(tmp_path, "raw", [tool("read_a", READ)],
                                                silent=True)}, POLICY)
    log = tmp_path / "serve.log"
    with gateway(paths, tmp_path, "--list-ttl", "3600") as client:
        client.initialize()
        before = names_of(client.request("tools/list"))
        rewrite(tmp_path, "raw", [tool("read_b", READ), tool("delete_x", READ)])
        # No notice and a long TTL: the gateway still serves what it read.
        held = [names_of(client.request("tools/list")) for _ in range(3)]
        call_old = call_text(client, "raw__read_a")
        asked_held = asked(tmp_path, "raw")
        reload_by_sighup(client, log)
        after = names_of(client.request("tools/list"))
        gone = call_text(client, "raw__read_a")
        hidden = call_text(client, "raw__delete_x")
    assert before == ["raw__read_a"]
    assert held == [["raw__read_a"]] * 3
    assert asked_held == 1
    assert call_old == (False, "ran read_a")
    assert after == ["raw__read_b"]
    assert asked(tmp_path, "raw") == 2
    assert gone[0] is True and hidden[0] is True
    assert ran(tmp_path, "raw") == [("tools/call", "read_a")]


def test_a_down_upstreams_cached_list_is_dropped(tmp_path):
    paths = raw_setup(tmp_path, {"a": spec_of(tmp_path, "a", [tool("read_a", READ)]),
                                 "b": spec_of(tmp_path, "b", [tool("read_b", READ)])}, POLICY)
    with gateway(paths, tmp_path, "--list-ttl", "3600") as client:
        client.initialize()
        before = names_of(client.request("tools/list"))
        os.kill(int((tmp_path / "a.pid").read_text()), signal.SIGKILL)
        after = until(lambda: names_of(client.request("tools/list")), ["b__read_b"])
        call_a = call_text(client, "a__read_a")
        call_b = call_text(client, "b__read_b")
    assert before == ["a__read_a", "b__read_b"]
    assert after == ["b__read_b"]
    assert call_a[0] is True
    assert call_b == (False, "ran read_b")
    assert "upstream 'a' (" in (tmp_path / "serve.log").read_text()
    assert "is down: its process has exited" in (tmp_path / "serve.log").read_text()


def test_an_upstream_of_ten_thousand_tools(tmp_path):
    tools = [tool(f"delete_{i:05d}" if i % 10 == 0 else f"tool_{i:05d}",
                  DESTROY if i % 10 == 5 else READ) for i in range(10_000)]
    paths = raw_setup(tmp_path, {"big": spec_of(tmp_path, "big", tools)}, POLICY)
    expected = sorted(f"big__tool_{i:05d}" for i in range(10_000) if i % 10 not in (0, 5))
    with gateway(paths, tmp_path, "--list-ttl", "3600") as client:
        client.initialize()
        listings = [names_of(client.request("tools/list")) for _ in range(3)]
        hidden = [call_text(client, name) for name in ("big__delete_00000", "big__tool_00005")]
        shown = call_text(client, "big__tool_09999")
    assert len(expected) == 8_000
    assert listings == [expected] * 3
    assert asked(tmp_path, "big") == 1
    assert [is_error for is_error, _ in hidden] == [True, True]
    assert shown == (False, "ran tool_09999")
    assert ran(tmp_path, "big") == [("tools/call", "tool_09999")]


CTX_POLICY = """\
[filter]
include = ["*/read_*", {cel = 'ctx != null && "admin" in ctx.scopes'}]
exclude = ["*/delete_*"]
"""


def test_per_token_lists_come_from_one_cached_catalog(tmp_path):
    raw_setup(tmp_path, {"raw": spec_of(tmp_path, "raw", [
        tool("read_a", READ), tool("admin_reset", READ), tool("delete_x", READ)])}, CTX_POLICY)
    served = serve_http(tmp_path, "--list-ttl", "3600")
    try:
        async def session(token):
            async with Client(served.url, auth=token, timeout=DEADLINE) as client:
                listed = [t.name for t in await client.list_tools()]
                calls = {}
                for name in ("raw__read_a", "raw__admin_reset", "raw__delete_x"):
                    result = await client.call_tool_mcp(name, {})
                    calls[name] = result.is_error
                return listed, calls

        async def main():
            rounds = []
            for token in ("token-alice", "token-bob", "token-alice", "token-bob"):
                rounds.append(await session(token))
            # And at once, the two callers' requests interleaved on one cache.
            rounds.extend(await asyncio.gather(*(session(t) for t in ["token-alice",
                                                                       "token-bob"] * 3)))
            return rounds

        rounds = asyncio.run(main())
    finally:
        assert served.stop() == 0
    alice = (["raw__admin_reset", "raw__read_a"],
             {"raw__read_a": False, "raw__admin_reset": False, "raw__delete_x": True})
    bob = (["raw__read_a"],
           {"raw__read_a": False, "raw__admin_reset": True, "raw__delete_x": True})
    assert rounds == [alice, bob, alice, bob] + [alice, bob] * 3
    assert asked(tmp_path, "raw") == 1
    assert sorted(ran(tmp_path, "raw")) == sorted(
        [("tools/call", "read_a")] * 10 + [("tools/call", "admin_reset")] * 5)


GROUPS_POLICY = """\
[[tool_filter_groups]]
mode = "dynamic"
tools = ["raw__git_*"]
keywords = ["git"]

[[tool_filter_groups]]
mode = "dynamic"
tools = ["raw__mail_*"]
keywords = ["email"]
"""


def test_lists_by_message_are_told_apart_by_the_cached_answers(tmp_path):
    # The groups read each request's message (its _meta): the answers kept for
    # one message are never given for another.
    paths = raw_setup(tmp_path, {"raw": spec_of(tmp_path, "raw", [
        tool("git_log", READ), tool("git_diff", READ), tool("mail_send", READ)])},
        GROUPS_POLICY)
    with gateway(paths, tmp_path, "--message-from", "meta:message") as client:
        client.initialize()

        def listed(message):
            meta = {} if message is None else {"_meta": {"message": message}}
            return names_of(client.request("tools/list", meta))

        rounds = [(listed("show the git log"), listed("send an email"), listed(None))
                  for _ in range(3)]
        calls = [call_text(client, name) for name in ("raw__git_log", "raw__mail_send")]
    assert rounds == [(["raw__git_diff", "raw__git_log"], ["raw__mail_send"], [])] * 3
    assert asked(tmp_path, "raw") == 1
    # A call with no message: no dynamic group is live, so neither is shown.
    assert [is_error for is_error, _ in calls] == [True, True]


SWITCH_MODULE = '''\
from pathlib import Path

SWITCH = Path(__file__).with_name("switch.txt")


def check(tool, ctx):
    return SWITCH.read_text() == "show"
'''


def test_a_function_pattern_is_judged_on_every_request(tmp_path):
    # A function may answer differently for the same caller: its answers are
    # never kept, neither for the listing nor for the call.
    paths = raw_setup(tmp_path, {"raw": spec_of(tmp_path, "raw", [tool("read_a", READ)])},
                      '[filter]\ninclude = [{callable = "switch:check"}]\n')
    (tmp_path / "switch.py").write_text(SWITCH_MODULE)
    (tmp_path / "switch.txt").write_text("show")
    with gateway(paths, tmp_path) as client:
        client.initialize()
        shown = names_of(client.request("tools/list"))
        (tmp_path / "switch.txt").write_text("hide")
        hidden = names_of(client.request("tools/list"))
        call_hidden = call_text(client, "raw__read_a")
        (tmp_path / "switch.txt").write_text("show")
        call_shown = call_text(client, "raw__read_a")
        again = names_of(client.request("tools/list"))
    assert (shown, hidden, again) == (["raw__read_a"], [], ["raw__read_a"])
    assert call_hidden[0] is True
    assert call_shown == (False, "ran read_a")
    assert ran(tmp_path, "raw") == [("tools/call", "read_a")]


def test_the_http_socket_answers_without_waiting_for_a_delayed_ack():
    # asyncio (uvicorn's server) sets TCP_NODELAY only on a socket whose
    # protocol is TCP: the gateway's listening socket must say so, or every
    # HTTP answer waits out the client's delayed ACK.
    import socket

    from toolfilter_fast.gateway.serve import bind

    sock = bind("127.0.0.1", 0)

    async def main():
        loop = asyncio.get_running_loop()
        accepted = loop.create_future()

        class Accept(asyncio.Protocol):
            def connection_made(self, transport):
                accepted.set_result(transport)

        server = await loop.create_server(Accept, sock=sock)
        _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        transport = await asyncio.wait_for(accepted, DEADLINE)
        value = transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP,
                                                              socket.TCP_NODELAY)
        writer.close()
        server.close()
        return value

    assert asyncio.run(main()) != 0
