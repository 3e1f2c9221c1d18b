"""The audit log and audit mode, through the real gateway (``toolfilter
serve`` as a process, raw upstreams as processes): each refused request,
hidden call, reload and upstream going down is one JSON line, never with a
token or an argument; in audit mode nothing is hidden and the log says what
would have been."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time

import pytest

fastmcp = pytest.importorskip("fastmcp", reason="needs the gateway extra")

from _gateway import DEADLINE, ran, raw_setup, serve_http, stdio_gateway  # noqa: E402
from fastmcp import Client  # noqa: E402

SECRET_TOKEN = "token-sekrit-6f1d2c"
WRONG_TOKEN = "token-mallory-93ab"
SECRET_ARG = "argument-sekrit-77e0"
TOOLS = {"ok": {"tools": [
    {"name": "read", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "wipe", "inputSchema": {"type": "object"},
     "annotations": {"destructiveHint": True}}]}}
POLICY = "[filter]\nexclude = [{annotations = {destructiveHint = true}}]\n"


def events(path, event=None):
    found = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return [e for e in found if event is None or e["event"] == event]


def wait_for_event(path, event, count=1):
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        if path.exists() and len(events(path, event)) >= count:
            return events(path, event)
        time.sleep(0.05)
    raise AssertionError(f"no {event!r} event in {path.read_text() if path.exists() else ''}")


def test_the_audit_log_has_each_event_and_no_secret(tmp_path):
    paths = raw_setup(tmp_path, TOOLS, POLICY)
    paths["tokens"].write_text(json.dumps({SECRET_TOKEN: {"client_id": "carol",
                                                          "scopes": []}}), encoding="utf-8")
    audit = tmp_path / "audit.jsonl"
    served = serve_http(tmp_path, "--audit-log", str(audit))
    try:
        async def refused():
            async with Client(served.url, auth=WRONG_TOKEN, timeout=DEADLINE) as client:
                await client.list_tools()

        with pytest.raises(Exception, match=r"401|error response"):
            asyncio.run(refused())

        async def calls():
            async with Client(served.url, auth=SECRET_TOKEN, timeout=DEADLINE) as client:
                listed = sorted(t.name for t in await client.list_tools())
                read = await client.call_tool("ok__read", {"text": SECRET_ARG})
                with pytest.raises(Exception, match="Unknown tool"):
                    await client.call_tool("ok__wipe", {"text": SECRET_ARG})
                return listed, read.content[0].text

        assert asyncio.run(calls()) == (["ok__read"], "ran read")
        assert ran(tmp_path, "ok") == [("tools/call", "read")]

        first = events(audit, "upstream")
        assert [(e["server"], e["state"]) for e in first] == [("ok", "up")]
        refusals = wait_for_event(audit, "refused")
        assert all(e["why"].startswith("the bearer token was refused") for e in refusals)
        assert all(e["client"].startswith("127.0.0.1:") for e in refusals)
        [hidden] = events(audit, "hidden")
        digest = hidden["policy"]
        assert hidden == {"time": hidden["time"], "event": "hidden", "request": "tools/call",
                          "who": "carol", "name": "ok__wipe", "server": "ok",
                          "stage": "visibility", "policy": digest}
        assert digest.startswith("sha256:") and len(digest) == 71

        # A policy that does not load, then one that does.
        paths["policy"].write_text("[filter]\nexlude = []\n", encoding="utf-8")
        served.process.send_signal(signal.SIGHUP)
        [bad] = wait_for_event(audit, "reload")
        assert (bad["ok"], bad["old"]) == (False, digest)
        assert "exlude" in bad["error"] and "new" not in bad
        paths["policy"].write_text(POLICY + "# reviewed\n", encoding="utf-8")
        served.process.send_signal(signal.SIGHUP)
        good = wait_for_event(audit, "reload", 2)[1]
        assert good["ok"] is True and good["old"] == digest and good["new"] != digest

        # The upstream goes away: the next listing finds it down.
        os.kill(int((tmp_path / "ok.pid").read_text()), signal.SIGKILL)

        async def listing():
            async with Client(served.url, auth=SECRET_TOKEN, timeout=DEADLINE) as client:
                return await client.list_tools()

        end = time.monotonic() + DEADLINE
        while not any(e["state"] == "down" for e in events(audit, "upstream")):
            assert time.monotonic() < end, audit.read_text()
            asyncio.run(listing())
            time.sleep(0.2)
        down = next(e for e in events(audit, "upstream") if e["state"] == "down")
        assert down["server"] == "ok" and down["why"]
    finally:
        assert served.stop() == 0
    for text in (audit.read_text(encoding="utf-8"), served.text()):
        for secret in (SECRET_TOKEN, WRONG_TOKEN, SECRET_ARG):
            assert secret not in text
    assert all(set(e) >= {"time", "event"} for e in events(audit))


@pytest.mark.parametrize("how", ["policy", "flag"])
def test_audit_mode_hides_nothing_and_says_what_it_would_have(tmp_path, how):
    policy = POLICY + ('\n[policy]\nmode = "audit"\n' if how == "policy" else "")
    paths = raw_setup(tmp_path, TOOLS, policy)
    audit = tmp_path / "audit.jsonl"
    extra = ["--audit-log", str(audit), "--ctx", '{"client_id": "dave"}']
    if how == "flag":
        extra += ["--mode", "audit"]

    async def main():
        async with stdio_gateway(paths, tmp_path / "serve.log", *extra) as client:
            listed = sorted(t.name for t in await client.list_tools())
            wiped = await client.call_tool("ok__wipe", {"text": SECRET_ARG})
            return listed, wiped.content[0].text

    assert asyncio.run(asyncio.wait_for(main(), DEADLINE)) == (["ok__read", "ok__wipe"],
                                                                 "ran wipe")
    assert ran(tmp_path, "ok") == [("tools/call", "wipe")]
    listing, call = events(audit, "would_hide")
    assert (listing["request"], listing["who"], listing["items"]) == (
        "tools/list", "dave", [{"name": "ok__wipe", "stage": "visibility"}])
    assert (call["request"], call["who"], call["name"], call["stage"]) == (
        "tools/call", "dave", "ok__wipe", "visibility")
    assert call["policy"] == listing["policy"]
    assert events(audit, "hidden") == []
    assert SECRET_ARG not in audit.read_text(encoding="utf-8")


def test_a_sighup_right_after_ready_is_a_reload(tmp_path):
    """SIGHUP at once after "gateway ready", maybe before the policy watcher
    runs: a reload waiting for it, never the signal's default (the end of the
    process, as a loaded machine once showed)."""
    raw_setup(tmp_path, TOOLS, POLICY)
    audit = tmp_path / "audit.jsonl"
    served = serve_http(tmp_path, "--audit-log", str(audit))
    try:
        served.process.send_signal(signal.SIGHUP)
        served.wait_for(r"reloaded \(SIGHUP\)")
        [reload] = wait_for_event(audit, "reload")
        assert reload["ok"] is True and reload["old"] == reload["new"]
    finally:
        assert served.stop() == 0
