"""Batches over catalogs of every layout the benchmark uses, and the batch's
per-block server table: the answers equal the scalar path's whatever the order
of the servers, the objects' addresses, or Python code run between items."""

from __future__ import annotations

import pytest

import toolfilter_fast
from toolfilter_fast import Tool, reference
from toolfilter_fast.bench import workload as _workload

FILTERS = {
    "no patterns": ([], []),
    "bare globs only": (["*read*", "*/get_*"], ["*_V2", "DELETE*"]),
    "server globs": (["github*/*", "fs/*", "*/list_*"], ["gitlab/*", "*/delete*"]),
    "exact pairs": (["fs/read_file", "github/*"], ["fs/Read-File"]),
}


@pytest.mark.parametrize("layout", _workload.LAYOUTS)
@pytest.mark.parametrize("interleaved", [False, True], ids=["grouped", "interleaved"])
@pytest.mark.parametrize("patterns", FILTERS, ids=list(FILTERS))
def test_every_layout_answers_as_the_scalar_path(layout, interleaved, patterns):
    tool_list = _workload.catalog(30_000, servers=3_000, layout=layout, interleaved=interleaved)
    include, exclude = FILTERS[patterns]
    fast = toolfilter_fast.compile(include=include, exclude=exclude)
    want = [fast.static_visible(t) for t in tool_list]
    ref = reference.compile(include=include, exclude=exclude)
    assert want[:2_000] == ref.static_mask(tool_list[:2_000])
    for threads in (1, 2):
        assert fast.static_mask(tool_list, threads=threads) == want
        kept = fast.static_filter(tool_list, threads=threads)
        assert [id(t) for t in kept] == [id(t) for t, keep in zip(tool_list, want, strict=True) if keep]


def test_equal_server_ids_in_distinct_objects_are_one_server():
    # Every tool has its own server id object: the table copies each, and the
    # matcher resolves them by value.
    tool_list = [Tool("".join(["s", str(i % 40)]), f"t{i % 13}") for i in range(20_000)]
    assert len({id(t.server_id) for t in tool_list}) == len(tool_list)
    f = toolfilter_fast.compile(include=["s1*/*", "*/t1"], exclude=["s12/T1"])
    assert f.static_mask(tool_list) == [f.static_visible(t) for t in tool_list]


class _Loose:
    """Not a Tool: its fields are read through properties, which make fresh
    strings (freed right after), so an address seen before may come back as
    another server id."""

    def __init__(self, server_id: str, name: str) -> None:
        self._pair = (server_id, name)

    @property
    def server_id(self) -> str:
        return "".join(self._pair[0])

    @property
    def name(self) -> str:
        return "".join(self._pair[1])


def test_python_code_between_items_ends_what_the_table_remembers():
    servers = [f"srv{i}" for i in range(300)]
    tool_list: list[object] = []
    for i in range(30_000):
        server = servers[(i * 7) % 300]
        tool_list.append(_Loose(server, f"t{i % 5}") if i % 3 else Tool(server, f"t{i % 5}"))
    f = toolfilter_fast.compile(include=["srv1*/*", "*/t1"], exclude=["srv10/*"])
    want = [f.static_visible(t) for t in tool_list]
    for threads in (1, 2):
        assert f.static_mask(tool_list, threads=threads) == want



_HOSTILE = ["a", "B", "_", "-", ".", "/", ":", "*", "\x00", "İ", "Σ", "ς", "\u212a", "k", "\ud800", "é"]


@pytest.mark.parametrize("seed", range(4))
def test_names_never_met_again_answer_as_the_reference(seed):
    # Past its first 4,096 tools a batch answers the every-server globs by
    # their shortcut (an automaton of the literal, prefix, suffix and infix
    # globs, the others indexed apart): hostile names that hardly repeat,
    # against globs of every shape on both sides, answer as the reference
    # does, on one thread and two.
    import random

    rng = random.Random(1000 + seed)

    def word(most: int) -> str:
        return "".join(rng.choice(_HOSTILE) for _ in range(rng.randrange(1, most + 1))).replace("/", "")

    tools = [Tool(f"s{rng.randrange(50)}", word(12)) for _ in range(12_000)]
    assert len({t.name for t in tools}) > 5_000

    def side() -> list[str]:
        shapes = [lambda: word(3), lambda: word(2) + "*", lambda: "*" + word(2),
                  lambda: "*" + word(2) + "*", lambda: f"{word(1)}*{word(1)}*{word(1)}",
                  lambda: f"*{word(1)}*{word(1)}*"]
        globs = [rng.choice(shapes)().replace("**", "*") for _ in range(60)]
        return [g for g in globs if g.strip("*")] + ["s1/*", f"s2/{word(2)}*"]

    include, exclude = side(), side()
    fast = toolfilter_fast.compile(include=include, exclude=exclude)
    want = reference.compile(include=include, exclude=exclude).static_mask(tools)
    assert True in want and False in want
    for threads in (1, 2):
        assert fast.static_mask(tools, threads=threads) == want


@pytest.mark.parametrize("seed", range(6))
def test_names_met_again_on_other_servers_answer_as_the_reference(seed):
    # A batch keeps what the every-server patterns said of a name for the
    # next tool of that name: a few hostile names over many servers, each
    # server with globs of its own, the names short and long, answer as the
    # reference does, on one thread and two.
    import random

    rng = random.Random(seed)
    pool = ["".join(rng.choice(_HOSTILE) for _ in range(rng.randrange(0, 30))) for _ in range(40)]
    pool += ["read_file", "Read-File", "READ.FILE", "x" * 25, "x" * 24]
    servers = [f"s{i}" for i in range(300)] + ["GitHub", "github", "İ", "Σ"]
    # Past the first 4,096 names, after which a batch keeps answers.
    tools = [Tool(rng.choice(servers), rng.choice(pool)) for _ in range(12_000)]
    # Bare globs of the names' pieces (a `/` would make a server glob).
    pieces = [name.replace("/", "")[:3] for name in pool] + ["read", "FILE", "x" * 24]
    pieces = [p for p in pieces if p.strip("*")]
    bare = [n for n in pool if n and "/" not in n]
    include = [f"*{w}*" for w in pieces[:15]] + [f"{w}*" for w in pieces[15:25]] + [
        "s1*/*", "github/read_*", *bare[:10]]
    exclude = [f"*{w}" for w in pieces[25:40]] + ["s2*/*", "GITHUB/READ*", "*/read.file",
                                                  *[n.upper() for n in bare[10:16]]]
    fast = toolfilter_fast.compile(include=include, exclude=exclude)
    ref = reference.compile(include=include, exclude=exclude)
    want = ref.static_mask(tools)
    assert True in want and False in want
    for threads in (1, 2):
        assert fast.static_mask(tools, threads=threads) == want
