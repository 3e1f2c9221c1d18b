"""The gateway against an unfiltered FastMCP proxy of the same servers, in one run.

    python benches/bench_gateway.py                  # 10,000 upstream tools, the table
    python benches/bench_gateway.py --tools 2000     # a quicker look
    pytest benches/bench_gateway.py                  # once, small, answers checked

Two real stdio upstreams (this file run as ``--upstream K N``: a FastMCP server
of N tools) hold the tools between them. The baseline is a FastMCP server with
one ``ProxyProvider`` per upstream under the same ``SERVER__`` names and no
policy; the gateway is ``toolfilter serve``'s, built by
``gateway.serve.build_gateway``, with a policy of a glob exclude, an
annotation exclude and a CEL include reading ctx (it keeps about nine tools in
ten). Both are reached with FastMCP's in-memory client, so the rows time the
proxies, not a transport in front of them; both proxy the same two upstream
processes. Rounds are interleaved (baseline and gateway in turn, which one first
swapped every round); each row gives
medians and p99 and the ratio of medians against its target:

* ``tools/list`` of all the upstream tools: target at most 1.2x;
* ``tools/call`` round trips of a visible tool: target at most 1.1x.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

SCRIPT = str(Path(__file__).resolve())

POLICY = """\
[filter]
include = [{cel = 'ctx != null && "user" in ctx.scopes'}]
exclude = ["*/delete_*", {annotations = {destructiveHint = true}, trusted = ["*"]}]
"""
CTX = {"client_id": "bench", "scopes": ["user"], "claims": {}, "headers": {}}


def tool_name(i: int) -> str:
    return f"delete_{i:05d}" if i % 20 == 0 else f"tool_{i:05d}"


def upstream(server: int, count: int) -> None:
    """An upstream of ``count`` tools (every 20th a delete_, every 20th another
    one destructive), served over stdio."""
    from fastmcp import FastMCP

    mcp = FastMCP(f"bench{server}")
    for i in range(count):
        def run(text: str = "", _i: int = i) -> str:
            return f"{_i} {text}"

        hints = {"destructiveHint": True} if i % 20 == 10 else {"readOnlyHint": True}
        mcp.tool(run, name=tool_name(i), description=f"tool {i} of server {server}",
                 annotations=hints)
    mcp.run(transport="stdio", show_banner=False, log_level="ERROR")


def _servers(directory: Path, total: int) -> Path:
    half = total // 2
    servers = {f"s{k}": {"command": sys.executable,
                         "args": [SCRIPT, "--upstream", str(k), str(half)]}
               for k in (0, 1)}
    path = directory / "servers.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def _proxies(directory: Path, total: int) -> tuple[Any, Any]:
    from fastmcp import FastMCP
    from fastmcp.server.transforms import Namespace

    from toolfilter_fast.gateway.serve import MessageSource, PolicyFile, build_gateway
    from toolfilter_fast.gateway.servers import read_servers
    from toolfilter_fast.gateway.upstream import Upstream

    specs = read_servers(str(_servers(directory, total)))
    (directory / "policy.toml").write_text(POLICY)
    gateway = build_gateway(PolicyFile(str(directory / "policy.toml")), specs,
                            ctx=lambda: CTX, message=MessageSource(), start_timeout=120,
                            watch=False)
    baseline: FastMCP[Any] = FastMCP("unfiltered proxy")
    for spec in specs:
        names = Namespace(spec.name)
        names._name_prefix = f"{spec.name}__"  # the gateway's SERVER__ names
        baseline.add_provider(Upstream(spec, start_timeout=120).wrap_transform(names))
    return baseline, gateway


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


async def measure(total: int, list_rounds: int, call_rounds: int) -> dict[str, Any]:

    with tempfile.TemporaryDirectory() as tmp:
        baseline, built = _proxies(Path(tmp), total)
        # The gateway starts its upstreams before it serves (as `toolfilter serve` does).
        await built.start()
        try:
            result = await _rounds(baseline, built.server, list_rounds, call_rounds)
        finally:
            await built.close()
    return result


async def _rounds(baseline: Any, gateway: Any, list_rounds: int,
                  call_rounds: int) -> dict[str, Any]:
    from fastmcp import Client

    async with Client(baseline, timeout=300) as plain, Client(gateway, timeout=300) as ours:
        plain_names = [t.name for t in await plain.list_tools()]
        our_names = [t.name for t in await ours.list_tools()]
        times: dict[str, list[float]] = {"list_plain": [], "list_ours": [],
                                         "call_plain": [], "call_ours": []}
        pairs = ((("list_plain", plain), ("list_ours", ours)),
                 (("list_ours", ours), ("list_plain", plain)))
        for r in range(list_rounds):
            for key, client in pairs[r % 2]:
                start = time.perf_counter()
                await client.list_tools()
                times[key].append(time.perf_counter() - start)
        visible = our_names[len(our_names) // 2]
        calls = ((("call_plain", plain), ("call_ours", ours)),
                 (("call_ours", ours), ("call_plain", plain)))
        for r in range(call_rounds):
            for key, client in calls[r % 2]:
                start = time.perf_counter()
                result = await client.call_tool_mcp(visible, {"text": "x"})
                times[key].append(time.perf_counter() - start)
                assert not result.is_error
        hidden = await ours.call_tool_mcp("s0__delete_00000", {})
    return {"plain_names": plain_names, "our_names": our_names, "times": times,
            "hidden_is_error": hidden.is_error}


def rows(result: dict[str, Any], total: int) -> list[dict[str, Any]]:
    times = result["times"]
    out = []
    for key, what, target in (("list", f"tools/list of {total:,} upstream tools", 1.2),
                              ("call", "tools/call round trip", 1.1)):
        ours, plain = times[f"{key}_ours"], times[f"{key}_plain"]
        ratio = statistics.median(ours) / statistics.median(plain)
        out.append({"workload": what, "gateway_median_ms": statistics.median(ours) * 1e3,
                    "proxy_median_ms": statistics.median(plain) * 1e3,
                    "gateway_p99_ms": _p99(ours) * 1e3, "proxy_p99_ms": _p99(plain) * 1e3,
                    "rounds": len(ours), "ratio": ratio, "target": target,
                    "met": "met" if ratio <= target else "missed"})
    return out


def render(table: list[dict[str, Any]], kept: int, total: int) -> str:
    lines = ["| workload | gateway median | proxy median | gateway p99 | proxy p99 | rounds "
             "| ratio | target | met |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in table:
        lines.append(f"| {r['workload']} | {r['gateway_median_ms']:.2f} ms | "
                     f"{r['proxy_median_ms']:.2f} ms | {r['gateway_p99_ms']:.2f} ms | "
                     f"{r['proxy_p99_ms']:.2f} ms | {r['rounds']} | {r['ratio']:.2f}x | "
                     f"<= {r['target']}x | {r['met']} |")
    lines.append("")
    lines.append(f"The policy keeps {kept:,} of the {total:,} tools; the proxy lists all of them.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--list-rounds", type=int, default=21)
    parser.add_argument("--call-rounds", type=int, default=300)
    parser.add_argument("--upstream", nargs=2, type=int, metavar=("K", "N"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.upstream:
        upstream(*args.upstream)
        return 0
    result = asyncio.run(measure(args.tools, args.list_rounds, args.call_rounds))
    from importlib.metadata import version

    print(f"fastmcp {version('fastmcp')}, mcp {version('mcp')}, "
          f"Python {sys.version.split()[0]}\n")
    print(render(rows(result, args.tools), len(result["our_names"]), args.tools))
    return 0


def test_gateway_bench_runs_and_answers_right():
    pytest.importorskip("fastmcp", reason="needs the gateway extra")
    result = asyncio.run(measure(200, 2, 3))
    expected = [f"s{k}__{tool_name(i)}" for k in (0, 1) for i in range(100)]
    assert sorted(result["plain_names"]) == sorted(expected)
    assert result["our_names"] == sorted(
        n for n in expected if "delete_" not in n and int(n[-5:]) % 20 != 10)
    assert result["hidden_is_error"] is True
    assert all(len(v) > 0 for v in result["times"].values())


if __name__ == "__main__":
    sys.exit(main())
