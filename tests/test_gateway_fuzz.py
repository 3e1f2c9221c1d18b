"""A fuzzer of the gateway: Hypothesis draws tool names (hostile ones among
them: empty, ``__``, ``_`` at either end, ``/``, NUL, lookalikes, a name
equal to another's gateway name) and policies, and one real gateway over one
real upstream (``_gateway_raw_upstream.py``, which reads its tools again
before each listing and records what it ran) is asked, for each example:

* the listing equals ``Policy.select`` over the same catalog (the names the
  gateway can route, in its order);
* every hidden, refused or never-existing name is answered identically (the
  name taken out);
* no call reaches a tool the listing does not show (the upstream's record).

The policy is changed by rewriting its file and sending SIGHUP. Lone
surrogates are left out: the MCP SDK's JSON parser refuses a message that
holds one, so such a list never reaches the gateway (the upstream is down
after its deadline instead). Bounded for CI (the ``ci`` profile's deadline
is off here; ``max_examples`` is small, each example is a few requests).
"""

from __future__ import annotations

import asyncio
import json
import signal

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

fastmcp = pytest.importorskip("fastmcp", reason="needs the gateway extra")

from _gateway import DEADLINE, ran, raw_setup, serve_http  # noqa: E402
from fastmcp import Client  # noqa: E402

from toolfilter_fast import Policy, Tool  # noqa: E402
from toolfilter_fast.config import parse_toml  # noqa: E402
from toolfilter_fast.gateway.provider import refusal  # noqa: E402

HOSTILE = ["", "_", "__", "raw__", "_x", "x_", "__x", "a__b", "a/b", "/", "x\x00y", "\x00",
           "read", "Read", "re\u0430d", "read\u200b", "İ", "\u212a", "raw__read", "delete_all",
           "*", "a:b"]
_names = st.lists(st.one_of(st.sampled_from(HOSTILE),
                            st.text(alphabet="ab_/:\x00İ\u0430.-", max_size=5)),
                  max_size=7)
_hints = st.sampled_from([None, {"readOnlyHint": True}, {"destructiveHint": True}])
POLICIES = [
    "",
    '[filter]\nexclude = [{annotations = {destructiveHint = true}}]\n',
    '[filter]\ninclude = ["raw/read*", "raw/_*", "raw/a*"]\n',
    '[filter]\ninclude = [{annotations = {readOnlyHint = true}}]\nexclude = ["*/*__*"]\n',
    '[filter]\nexclude = ["raw/*_"]\n\n[budget]\nmax_tools = 2\n',
]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fuzz")
    raw_setup(directory, {"raw": {"tools": [], "reread": True}}, "")
    served = serve_http(directory)
    yield directory, served
    assert served.stop() == 0


def set_up(directory, served, tools, policy):
    spec_path = directory / "raw.spec.json"
    spec = json.loads(spec_path.read_text())
    spec["tools"] = tools
    spec_path.write_text(json.dumps(spec))
    (directory / "policy.toml").write_text(policy)
    mark = len(served.text())
    served.process.send_signal(signal.SIGHUP)
    served.wait_for(r"reloaded \(SIGHUP\)", mark)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(names=_names, hints=st.lists(_hints, min_size=7, max_size=7),
       policy=st.sampled_from(POLICIES))
def test_the_gateway_lists_what_the_policy_selects_and_runs_nothing_else(gateway, names, hints,
                                                                         policy):
    directory, served = gateway
    tools = [{"name": name, "inputSchema": {"type": "object"},
              **({"annotations": hint} if hint else {})} for name, hint in zip(names, hints, strict=False)]
    set_up(directory, served, tools, policy)
    before = len(ran(directory, "raw"))

    # The catalog the gateway can route: names listed once and not refused, by name.
    counts = {name: names.count(name) for name in names}
    routable = sorted((t for t in tools if counts[t["name"]] == 1
                       and refusal("tools", t["name"]) is None), key=lambda t: t["name"])
    catalog = [Tool("raw", t["name"], annotations=t.get("annotations"),
                    input_schema=t["inputSchema"]) for t in routable]
    expected = [f"raw__{t.name}" for t in Policy.from_config(parse_toml(policy)).select(
        catalog).tools]
    hidden = sorted(({f"raw__{name}" for name in names} | {"raw__", "raw__never_existed", "raw"})
                    - set(expected))

    async def main():
        async with Client(served.url, auth="token-bob", timeout=DEADLINE) as client:
            listed = [t.name for t in await client.list_tools()]
            answers = []
            for name in hidden:
                result = await client.call_tool_mcp(name, {})
                text = " ".join(getattr(c, "text", "") for c in result.content)
                answers.append((result.is_error, text.replace(repr(name), "NAME")))
            for name in listed:
                await client.call_tool_mcp(name, {})
            return listed, answers

    listed, answers = asyncio.run(main())
    assert listed == expected
    assert [(name, answer) for name, answer in zip(hidden, answers, strict=True)
            if answer != (True, "Unknown tool: NAME")] == []
    assert [name for _, name in ran(directory, "raw")[before:]] == [n[len("raw__"):]
                                                                    for n in listed]
