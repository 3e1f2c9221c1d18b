"""Eight threads share one filter and one catalog for a bounded time.

Two refresh servers (swapping each between two tool lists), two list, two
resolve and two run batches (on one thread and on every core; a batch holds
the GIL while it reads, and the others run between batches). Every answer must equal one computed single-threaded
beforehand: a listing shows, server by server, exactly the visible tools of
one of that server's two lists (never a mix), a resolve returns a tool that is
visible in one of them or raises ToolNotFoundError only where one hides or
lacks it, and a batch equals its precomputed mask.

``TOOLFILTER_STRESS_SECONDS`` sets the duration (default 2 s; the notes give a
longer run).
"""

from __future__ import annotations

import os
import random
import re
import threading
import time

import toolfilter_fast
from toolfilter_fast import Tool, ToolCatalog, ToolNotFoundError

SECONDS = float(os.environ.get("TOOLFILTER_STRESS_SECONDS", "2"))
SERVERS = ["gh", "fs", "slack", "misc"]
CONTEXTS = [None, {"role": "admin"}, {"role": "user"}]


def role_allows(tool, ctx):
    return isinstance(ctx, dict) and ctx.get("role") == "admin" and tool.name.startswith("merge")


def user_denied(tool, ctx):
    if isinstance(ctx, dict) and ctx.get("role") == "user" and "secret" in tool.name:
        return True
    if tool.name == "raises":
        raise RuntimeError("fails closed")
    return False


def make_filter():
    return toolfilter_fast.compile(
        include=["gh/*", "fs/read_*", ("slack", re.compile("^post_")), "misc/*e*", role_allows],
        exclude=["*/delete_*", "*/*ADMIN*", ("*", re.compile(r"\.v0$")), user_denied],
    )


def variants(server):
    """Two deterministic tool lists per server; names overlap, descriptions differ."""
    names = ["create_issue", "delete_repo", "Delete-Branch", "read_file", "write_file",
             "post_message", "merge_pr", "secret_notes", "raises", "admin_panel", "x.v0",
             "merge_secret", "echo", "résumé", "\ud800lone"]
    a = [Tool(server, n, description="A") for n in names[::2]]
    b = [Tool(server, n, description="B") for n in names[1::2] + names[0:4:2]]
    return {"A": a, "B": b}


def run_eight(worker):
    """Runs ``worker(slot)`` on eight threads at once and waits for them."""
    threads = [threading.Thread(target=worker, args=(slot,)) for slot in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_eight_threads_agree_with_one():
    f = make_filter()
    lists = {s: variants(s) for s in SERVERS}
    # Single-threaded answers, before any thread starts.
    shown = {
        (s, v, i): [t for t in tools if f.static_visible(t) and f.visible(t, ctx)]
        for s, by_variant in lists.items() for v, tools in by_variant.items()
        for i, ctx in enumerate(CONTEXTS)
    }
    by_name = {
        (s, v, t.name): t for s, by_variant in lists.items() for v, tools in by_variant.items()
        for t in tools
    }
    batch = [t for s in SERVERS for v in ("A", "B") for t in lists[s][v]] * 400
    static_mask = [f.static_visible(t) for t in batch]
    masks = [[f.visible(t, ctx) for t in batch] for ctx in CONTEXTS]

    catalog = ToolCatalog(f)
    for s in SERVERS:
        catalog.refresh(s, lists[s]["A"])

    stop = time.monotonic() + SECONDS
    errors: list[str] = []
    counts = [0] * 8

    def run(slot, body):
        def loop():
            rng = random.Random(slot)
            try:
                # At least once, however loaded the machine: on a busy shared
                # machine a thread once got no turn in the whole duration.
                while counts[slot] == 0 or time.monotonic() < stop:
                    body(rng)
                    counts[slot] += 1
            except Exception as err:  # reported below, with the thread's slot
                errors.append(f"thread {slot}: {type(err).__name__}: {err}")
        return threading.Thread(target=loop)

    def refresh(rng):
        s = rng.choice(SERVERS)
        catalog.refresh(s, lists[s][rng.choice("AB")])

    def listing(rng):
        i = rng.randrange(len(CONTEXTS))
        got = catalog.list_tools(CONTEXTS[i])
        servers_seen = list(dict.fromkeys(t.server_id for t in got))
        assert servers_seen == [s for s in SERVERS if s in servers_seen], servers_seen
        for s in SERVERS:
            part = [t for t in got if t.server_id == s]
            assert part in (shown[s, "A", i], shown[s, "B", i]), (s, part)

    def resolving(rng):
        s = rng.choice(SERVERS)
        i = rng.randrange(len(CONTEXTS))
        name = rng.choice([t.name for v in "AB" for t in lists[s][v]])
        allowed = [by_name.get((s, v, name)) for v in "AB"]
        visible = [t for t in allowed if t is not None and t in shown[s, t.description, i]]
        try:
            tool = catalog.resolve(s, name, CONTEXTS[i])
        except ToolNotFoundError:
            assert len(visible) < 2, (s, name, i)
        else:
            assert tool in visible, (s, name, i, tool)

    def batching(rng):
        threads = rng.choice([1, 2, None])
        i = rng.randrange(len(CONTEXTS))
        assert f.static_mask(batch, threads=threads) == static_mask
        assert f.mask(batch, CONTEXTS[i], threads=threads) == masks[i]
        kept = f.filter(batch, CONTEXTS[i], threads=threads)
        assert kept == [t for t, keep in zip(batch, masks[i], strict=True) if keep]
        columns = ([t.server_id for t in batch], [t.name for t in batch])
        assert f.static_mask_columns(*columns, threads=threads) == static_mask

    bodies = [refresh, refresh, listing, listing, resolving, resolving, batching, batching]
    threads = [run(slot, body) for slot, body in enumerate(bodies)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS + 120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert all(c > 0 for c in counts), counts


def test_threads_share_a_filter_with_no_torn_scalar_answers():
    # Many tools of different lengths and scripts through one filter from eight
    # threads at once: each thread's answers equal the single-threaded ones.
    f = make_filter()
    tools = [Tool(s, f"{prefix}{i}{suffix}") for i in range(300) for s in SERVERS
             for prefix, suffix in (("read_", ""), ("delete_", "x"), ("MERGE", "É" * (i % 7)), ("post_", ".v0"))]
    want = {i: [f.visible(t, ctx) for t in tools] for i, ctx in enumerate(CONTEXTS)}
    errors: list[str] = []

    def worker(slot):
        i = slot % len(CONTEXTS)
        for _ in range(3):
            got = [f.visible(t, CONTEXTS[i]) for t in tools]
            if got != want[i]:
                errors.append(f"thread {slot} disagrees")

    run_eight(worker)
    assert errors == []


def test_threads_share_a_group_filter():
    # Tool groups (landed on main): one GroupFilter, eight threads, per-turn
    # messages; every answer equals the single-threaded one.
    from toolfilter_fast.groups import GroupFilter, ToolFilterGroup

    g = GroupFilter([
        ToolFilterGroup("always", ["gh__read_*", "*__list"]),
        ToolFilterGroup("dynamic", ["fs__*"], ["files"]),
        ToolFilterGroup("dynamic", ["slack__post_*"], ["slack", "Σλακ"]),
    ])
    names = [f"{s}__{t}{i}" for i in range(2_000) for s in ("gh", "fs", "slack")
             for t in ("read_", "post_", "")] + ["x__list"]
    mcp = frozenset(names[::2])
    messages = ["hello", "open my FILES", "post to σλακ", "files and slack"]
    want = {m: g.visible_names(names, m, mcp) for m in messages}
    stop = time.monotonic() + SECONDS / 2
    errors: list[str] = []

    def worker(slot):
        rng = random.Random(slot)
        while time.monotonic() < stop:
            m = rng.choice(messages)
            if g.visible_names(names, m, mcp) != want[m]:
                errors.append(f"thread {slot}: {m!r}")

    run_eight(worker)
    assert errors == []
