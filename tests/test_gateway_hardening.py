"""The gateway against hostile and broken upstreams, as real processes
(``_gateway_raw_upstream.py`` lists exactly what a test says and records what
it ran): names that cannot be routed, prompts and resources as side doors, a
relevance stage, a slow policy, a stop at every moment of start-up, a hung
and a slow upstream, a noisy one, a refused token.

Some tests give a client a timeout shorter than a deadline of the gateway: the
point is that the gateway answers without waiting that deadline (it would
fail the request otherwise), not how fast it answers.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time

import pytest

fastmcp = pytest.importorskip("fastmcp", reason="needs the gateway extra")

from _gateway import (  # noqa: E402
    DEADLINE,
    Served,
    change_tools,
    processes_with,
    ran,
    raw_setup,
    serve_http,
    stdio_gateway,
    toolfilter,
)
from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StreamableHttpTransport  # noqa: E402
from test_mcp_roundtrip import failure  # noqa: E402

READ = {"readOnlyHint": True}
DESTROY = {"destructiveHint": True}


def tool(name, annotations=None, description=None):
    found = {"name": name, "inputSchema": {"type": "object"}}
    if annotations is not None:
        found["annotations"] = annotations
    if description is not None:
        found["description"] = description
    return found


async def refused(name, request):
    """How a request fails, the name taken out (as ``failure`` does for calls)."""
    with pytest.raises(Exception) as raised:
        await request
    return type(raised.value), str(raised.value).replace(repr(name), "NAME").replace(name, "NAME")


@pytest.fixture(params=["stdio", "http"])
def session(request, tmp_path):
    """A client session on the gateway over the given transport: ``open(paths)``."""
    started: list[Served] = []

    def open_session(paths, *extra, token="token-bob"):
        if request.param == "stdio":
            return stdio_gateway(paths, tmp_path / "serve.log", *extra)
        served = serve_http(tmp_path, *extra)
        started.append(served)
        return Client(served.url, auth=token, timeout=DEADLINE)

    yield open_session
    for served in started:
        assert served.stop() == 0


def log_of(tmp_path):
    return (tmp_path / "serve.log").read_text(encoding="utf-8", errors="replace")


# --- item 1: a name the gateway cannot route is refused, never another tool run -----


def test_an_empty_tool_name_never_runs_another_tool(tmp_path, session):
    # The empty-named tool would be "raw__", the gateway's name of nothing;
    # the tool really named "raw__" is destructive and hidden.
    paths = raw_setup(tmp_path, {"raw": {"tools": [
        tool("", READ), tool("raw__", DESTROY), tool("git_log", READ)]}},
        "[filter]\nexclude = [{annotations = {destructiveHint = true}}]\n")

    async def main():
        async with session(paths) as client:
            listed = [t.name for t in await client.list_tools()]
            empty = await failure(client, "raw__", {})
            hidden = await failure(client, "raw__raw__", {})
            never = await failure(client, "raw__never_existed", {})
            ran_ok = await client.call_tool("raw__git_log", {})
            return listed, empty, hidden, never, ran_ok.content[0].text

    listed, empty, hidden, never, ran_ok = asyncio.run(main())
    assert listed == ["raw__git_log"]
    assert empty == hidden == never
    assert ran_ok == "ran git_log"
    assert ran(tmp_path, "raw") == [("tools/call", "git_log")]
    assert "upstream 'raw' lists tool '': not shown, and no request reaches it" in log_of(tmp_path)


# --- item 2: prompts and resources follow the policy ------------------------------------


SIDE_DOORS = {
    "fetch": {"tools": [tool("fetch", READ)],
              "prompts": [{"name": "fetch", "arguments": [{"name": "url", "required": True}]}],
              "resources": [{"uri": "fetch://robots", "name": "robots"}],
              "templates": [{"uriTemplate": "fetch://page/{url}", "name": "page"}]},
    "notes": {"tools": [tool("read_note", READ), tool("delete_all", DESTROY)],
              "prompts": [{"name": "summary"}, {"name": "Delete-All"}],
              "resources": [{"uri": "notes://a.txt", "name": "a"},
                            {"uri": "notes://secret/key", "name": "key"}],
              "templates": [{"uriTemplate": "notes://n/{id}", "name": "note"}]},
}
SIDE_DOOR_POLICY = """\
[filter]
exclude = ["fetch/*", {annotations = {destructiveHint = true}}]

[resources]
exclude = ["*/notes://secret/*"]
"""


def test_prompts_and_resources_are_no_side_door(tmp_path, session):
    paths = raw_setup(tmp_path, SIDE_DOORS, SIDE_DOOR_POLICY)

    async def main():
        async with session(paths) as client:
            prompts = [p.name for p in await client.list_prompts()]
            resources = [str(r.uri) for r in await client.list_resources()]
            templates = [t.uri_template for t in await client.list_resource_templates()]
            got = await client.get_prompt("notes__summary")
            read = await client.read_resource("notes://notes/a.txt")
            by_template = await client.read_resource("notes://notes/n/7")
            never = {
                "prompt": await refused("notes__never", client.get_prompt("notes__never")),
                "resource": await refused("notes://notes/never",
                                          client.read_resource("notes://notes/never")),
            }
            hidden = {
                "prompt": [await refused(n, client.get_prompt(n, {"url": "http://127.0.0.1:9/"}))
                           for n in ("fetch__fetch", "notes__Delete-All")],
                "resource": [await refused(u, client.read_resource(u)) for u in (
                    "fetch://fetch/robots", "notes://notes/secret/key", "fetch://fetch/page/x")],
            }
            return (prompts, resources, templates, got.messages[0].content.text,
                    read[0].text, by_template[0].text, never, hidden)

    prompts, resources, templates, got, read, by_template, never, hidden = asyncio.run(main())
    assert prompts == ["notes__summary"]
    assert resources == ["notes://notes/a.txt"]
    assert templates == ["notes://notes/n/{id}"]
    assert (got, read, by_template) == ("got summary", "read notes://a.txt", "read notes://n/7")
    assert hidden["prompt"] == [never["prompt"]] * 2
    assert hidden["resource"] == [never["resource"]] * 3
    assert ran(tmp_path, "fetch") == []
    assert ran(tmp_path, "notes") == [("prompts/get", "summary"), ("resources/read", "notes://a.txt"),
                                      ("resources/read", "notes://n/7")]


# --- item 3: with relevance, a call is judged in the listing ------------------------------

DOCS = {"docs": {"tools": [
    tool("search_docs", READ, "Search the documentation pages for a phrase."),
    tool("read_page", READ, "Read one documentation page."),
    tool("send_email", READ, "Send an email message to a person."),
    tool("book_flight", READ, "Book a flight ticket to a city."),
    tool("play_song", READ, "Play a song from the music library."),
]}}
RELEVANCE_POLICY = "[filter]\ninclude = [\"docs/*\"]\n\n[relevance]\ntop_k = 2\n"


def test_a_call_with_relevance_is_allowed_only_if_the_listing_shows_it(tmp_path):
    paths = raw_setup(tmp_path, DOCS, RELEVANCE_POLICY)
    message = "search the documentation pages"
    served = serve_http(tmp_path, "--message-from", "header:x-message")
    try:
        async def main():
            transport = StreamableHttpTransport(served.url, headers={"x-message": message},
                                                auth="token-bob")
            async with Client(transport, timeout=DEADLINE) as client:
                listed = [t.name for t in await client.list_tools()]
                calls = {}
                for name in DOCS["docs"]["tools"]:
                    result = await client.call_tool_mcp(f"docs__{name['name']}", {})
                    calls[f"docs__{name['name']}"] = not result.is_error
                return listed, calls

        listed, calls = asyncio.run(main())
    finally:
        assert served.stop() == 0
    assert len(listed) == 2
    assert sorted(name for name, allowed in calls.items() if allowed) == sorted(listed)
    # check, over the same catalog, agrees with the gateway.
    fetched = toolfilter("fetch", "--servers", str(paths["servers"]), "-o", str(tmp_path / "cat"))
    assert fetched.returncode == 0, fetched.stderr
    check = toolfilter("check", "--config", str(paths["policy"]), "--message", message,
                       "--format", "json", str(tmp_path / "cat" / "docs.json"))
    assert check.returncode == 0, check.stderr
    visible = sorted(f"{row['server_id']}__{row['name']}" for row in json.loads(check.stdout)["tools"]
                     if row["visible"])
    assert visible == sorted(listed)


# --- item 10: a slow policy stalls no other client -----------------------------------

SLOW_POLICY_MODULE = '''\
import time


def check(tool, ctx):
    if ctx["client_id"] == "alice":
        time.sleep(120)
    return True
'''


def test_a_slow_policy_evaluation_does_not_stall_other_clients(tmp_path):
    raw_setup(tmp_path, DOCS, '[filter]\ninclude = [{callable = "slowpolicy:check"}]\n')
    (tmp_path / "slowpolicy.py").write_text(SLOW_POLICY_MODULE)
    served = serve_http(tmp_path, "--policy-timeout", "20")
    try:
        async def listing(token):
            async with Client(served.url, auth=token, timeout=DEADLINE) as client:
                return [t.name for t in await client.list_tools()]

        async def main():
            slow = asyncio.ensure_future(listing("token-alice"))
            await asyncio.sleep(1)  # alice's listing is in the policy by now (or soon)
            quick = await listing("token-bob")
            pending = not slow.done()
            return quick, pending, await slow

        quick, pending, slow = asyncio.run(main())
        served.wait_for(r"a tools listing refused for client 'alice': the policy did not answer "
                        r"within 20 s")
    finally:
        assert served.stop() == 0
    assert quick == [f"docs__{t['name']}" for t in sorted(DOCS["docs"]["tools"],
                                                          key=lambda t: t["name"])]
    assert pending
    assert slow == []  # failed closed


# --- item 11: a stop at every moment of start-up leaves nothing behind ----------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("moment", ["at once", "upstreams starting", "serving"])
def test_a_stop_at_any_moment_ends_the_gateway_and_every_upstream(tmp_path, transport, moment):
    token = f"1000.{abs(hash(str(tmp_path))) % 10**6}"
    paths = raw_setup(tmp_path, {"ok": {"tools": [tool("read", READ)]}}, "")
    servers = json.loads(paths["servers"].read_text())
    servers["mcpServers"]["ok"]["args"].append(token)  # so it is found by its command line
    servers["mcpServers"]["sleepy"] = {"command": "sleep", "args": [token]}
    paths["servers"].write_text(json.dumps(servers))
    extra = ["--transport", "http", "--port", "0", "--token-file", str(paths["tokens"])] \
        if transport == "http" else []
    log = tmp_path / "serve.log"
    with log.open("w") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolfilter_fast", "serve", "--config", str(paths["policy"]),
             "--servers", str(paths["servers"]), "--start-timeout", "3", *extra],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err)
    try:
        end = time.monotonic() + DEADLINE
        if moment == "upstreams starting":
            while len(processes_with(token)) < 2 and time.monotonic() < end:
                time.sleep(0.02)
            assert "gateway ready" not in log.read_text()
        elif moment == "serving":
            while "gateway ready" not in log.read_text() and time.monotonic() < end:
                time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=DEADLINE)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
    # At once, the signal may come before Python has imported the gateway, when
    # nothing has started: its default action ends the process.
    assert code == 0 or (moment == "at once" and code == -signal.SIGTERM), log.read_text()
    end = time.monotonic() + 10
    while processes_with(token) and time.monotonic() < end:
        time.sleep(0.05)
    assert processes_with(token) == []
    assert "Traceback" not in log.read_text()


# --- item 12: a hung or slow upstream costs at most its deadline, once -----------------


def test_a_hung_upstream_is_skipped_at_once_by_every_listing(tmp_path):
    raw_setup(tmp_path, {"hung": {"hang": True, "tools": [tool("x", READ)]},
                         "ok": {"tools": [tool("read", READ)]}}, "")
    served = serve_http(tmp_path, "--start-timeout", "8", "--list-timeout", "60")
    try:
        served.wait_for(r"upstream 'hung' \(.*\) is down")
        assert "1 of 2 upstreams up (ok)" in served.text()

        async def listing():
            async with Client(served.url, auth="token-bob", timeout=5) as client:
                return [t.name for t in await client.list_tools()]

        assert [asyncio.run(listing()) for _ in range(3)] == [["ok__read"]] * 3
    finally:
        assert served.stop() == 0


def test_a_slow_upstream_costs_its_deadline_once_and_comes_back(tmp_path):
    raw_setup(tmp_path, {"slow": {"tools": [tool("x", READ)], "slow_lists": [2],
                                  "list_delay": 15, "reread": True},
                         "ok": {"tools": [tool("read", READ)]}}, "")
    served = serve_http(tmp_path, "--list-timeout", "6")
    try:
        async def listing(timeout):
            async with Client(served.url, auth="token-bob", timeout=timeout) as client:
                return [t.name for t in await client.list_tools()]

        # Its change notice: the next listing asks it again (its second list, the slow one).
        change_tools(tmp_path, "slow", [tool("x", READ)], served.log)
        first = asyncio.run(listing(DEADLINE))
        served.wait_for(r"upstream 'slow' did not answer tools/list within 6 s")
        # Slow now: not waited for (a wait of 6 s would fail these at 4 s).
        later = [asyncio.run(listing(4)) for _ in range(2)]
        served.wait_for(r"upstream 'slow' is up again: 1 tools")
        back = asyncio.run(listing(DEADLINE))
    finally:
        assert served.stop() == 0
    assert first == later[0] == later[1] == ["ok__read"]
    assert back == ["slow__x", "ok__read"]  # in the servers file's order
    assert served.text().count("did not answer tools/list") == 1


# --- also found: stderr with the server's name; 401s logged ------------------------------


def test_upstream_stderr_is_logged_with_its_name_and_rate_limited(tmp_path):
    lines = ["hello from noisy"] + [f"line {i}" for i in range(100)]
    raw_setup(tmp_path, {"noisy": {"tools": [tool("read", READ)], "stderr": lines}}, "")
    served = serve_http(tmp_path)
    try:
        served.wait_for(r"upstream 'noisy': hello from noisy")
        served.wait_for(r"upstream 'noisy': line 18\n")
        # Said when the window of 10 s is over.
        served.wait_for(r"upstream 'noisy': 81 more stderr lines not logged \(more than 20 in "
                        r"10 s\)")
    finally:
        assert served.stop() == 0
    assert "upstream 'noisy': line 19\n" not in served.text()  # the 21st line of the window


def test_a_refused_request_is_logged_without_its_token(tmp_path):
    raw_setup(tmp_path, {"ok": {"tools": [tool("read", READ)]}}, "")
    served = serve_http(tmp_path)
    try:
        async def main(auth):
            async with Client(served.url, auth=auth, timeout=DEADLINE) as client:
                await client.list_tools()

        for auth in ("token-mallory", None):
            with pytest.raises(Exception, match=r"401|error response"):
                asyncio.run(main(auth))
        served.wait_for(r"request refused \(HTTP 401\): client 127\.0\.0\.1:\d+, no bearer token")
        served.wait_for(r"request refused \(HTTP 401\): client 127\.0\.0\.1:\d+, the bearer "
                        r"token was refused")
    finally:
        assert served.stop() == 0
    assert "token-mallory" not in served.text()
