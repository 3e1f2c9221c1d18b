"""The standard benchmark workload (docs/performance.md): deterministic, generated.

``catalog(n)`` builds about ``sqrt(n)`` servers of about ``sqrt(n)`` tools each, with
server ids like ``github``, ``fs-2``, ``Slack.Enterprise`` and tool names like
``create_issue``, ``read-file``, ``Delete.Repo``, ``list_pull_requests_v2``: mixed case
and separators, about 10% non-ASCII, a few holding ``/`` or ``:``.

``patterns(n, option, tools)`` draws ``n`` patterns for one option from the catalog:
exact ``server/tool``, ``server/*``, ``prefix_*``, ``*_suffix``, ``*infix*``,
``a*b*c``, bare tool names, ``*``-server patterns, and about one regex pattern per
hundred (scoped to one server, as regexes usually are). Exclude patterns are written in
other case and separators than the names they hit, so the loose fold matters.

Everything depends only on the arguments and ``seed``: the same call gives the same
workload on every machine.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from .._tool import Tool

__all__ = ["LAYOUTS", "catalog", "contexts", "dynamic_patterns", "patterns"]

_SERVERS = [
    "github", "gitlab", "fs", "slack", "jira", "notion", "postgres", "s3", "browser",
    "calendar", "gmail", "linear", "sentry", "stripe", "docker", "k8s", "figma", "zoom",
]
_VERBS = [
    "create", "read", "list", "get", "update", "delete", "search", "merge", "close",
    "open", "send", "post", "upload", "download", "run", "query", "describe", "sync",
]
_NOUNS = [
    "issue", "file", "repo", "pull_requests", "message", "channel", "table", "bucket",
    "page", "event", "comment", "branch", "user", "invoice", "container", "pod",
    "frame", "meeting", "dir", "record",
]
_SUFFIXES = ["", "", "", "_v2", "_all", "_batch", "_by_id"]
_NON_ASCII = ["é", "ü", "Σ", "İ", "ß", "ñ", "ø", "\u212a", "ж", "中"]


def _style(rng: random.Random, words: list[str]) -> str:
    sep = rng.choice(["_", "_", "_", "-", "."])
    text = sep.join(words)
    case = rng.random()
    if case < 0.15:
        return text.upper()
    if case < 0.35:
        return sep.join(w.capitalize() for w in words)
    return text


def _server_ids(count: int, rng: random.Random) -> list[str]:
    ids: list[str] = []
    seen: set[str] = set()
    k = 0
    while len(ids) < count:
        base = _SERVERS[k % len(_SERVERS)]
        number = k // len(_SERVERS)
        k += 1
        if number == 0:
            sid = base
        else:
            sid = _style(rng, [base, str(number)])
        if rng.random() < 0.03:
            sid = f"{sid}.Enterprise"
        if sid not in seen:
            seen.add(sid)
            ids.append(sid)
    return ids


def _tool_name(rng: random.Random) -> str:
    words = [rng.choice(_VERBS), *rng.choice(_NOUNS).split("_")]
    name = _style(rng, words) + rng.choice(_SUFFIXES)
    roll = rng.random()
    if roll < 0.10:
        at = rng.randrange(len(name) + 1)
        name = name[:at] + rng.choice(_NON_ASCII) + name[at:]
    elif roll < 0.12:
        name = name + rng.choice(["/raw", ":beta"])
    return name


#: How a catalog's objects lie in memory (see :func:`catalog`).
LAYOUTS = ("shuffled", "in-order")


def catalog(n: int, seed: int = 0, *, servers: int | None = None,
            layout: str = "shuffled", interleaved: bool = False,
            distinct: bool = False) -> list[Tool]:
    """``n`` tools of ``servers`` servers (about ``sqrt(n)`` by default), grouped by
    server (as a tool list refresh delivers them), or with ``interleaved`` in a
    seeded order that mixes the servers (as a registry's listing sorted by
    anything but server does): a block of a batch then holds thousands of servers.

    ``layout`` says how the objects lie in memory; the pairs, and their order, are
    the same for both:

    * ``"shuffled"``: each server's names are made first and listed in an order
      unrelated to the order they were made in, so a loop over the tools jumps
      around in memory for each name;
    * ``"in-order"``: as a loader builds a catalog, the names and tools are made
      in list order while a JSON listing of it is parsed, so a loop over the
      tools reads memory front to back.

    Servers of one catalog share many names (the same verbs and nouns), as
    instances of one kind of server do; with ``distinct`` every name carries its
    server's number instead (``create_issue_s17``), so no two tools share a name:
    the worst case of anything that keeps answers per name.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    # The default catalog keeps the seed string it always had.
    key = f"{n}-{seed}" if servers is None else f"{n}-{servers}-{seed}"
    rng = random.Random(f"catalog-{key}")
    count_servers = max(1, round(n ** 0.5)) if servers is None else max(1, min(servers, n))
    ids = _server_ids(count_servers, rng)
    listing: list[tuple[str, list[str]]] = []
    tools: list[Tool] = []
    for s, sid in enumerate(ids):
        count = n // count_servers + (1 if s < n % count_servers else 0)
        names: set[str] = set()
        while len(names) < count:
            name = _tool_name(rng)
            if name in names:
                name = f"{name}_{len(names)}"
            names.add(name)
        if distinct:
            names = {f"{name}_s{s}" for name in names}
        # Shuffled from sorted order: a set's own order follows str hashes,
        # which differ from process to process.
        ordered = sorted(names)
        rng.shuffle(ordered)
        if layout == "in-order" or interleaved:
            listing.append((sid, ordered))
        else:
            tools.extend(Tool(sid, name) for name in ordered)
    if interleaved:
        pairs = [(sid, name) for sid, names in listing for name in names]
        rng.shuffle(pairs)
        if layout == "shuffled":
            return [Tool(sid, name) for sid, name in pairs]
        return _loaded_entries(json.dumps([{"server": sid, "name": name} for sid, name in pairs]),
                               ids)
    if layout == "in-order":
        return _loaded(json.dumps([{"server": sid, "tools": [{"name": name} for name in names]}
                                   for sid, names in listing]))
    return tools


def _loaded_entries(text: str, ids: list[str]) -> list[Tool]:
    """The tools of a flat JSON listing of ``{"server", "name"}`` entries, made in
    order as it is read; each entry's server id is the registered one (one object
    per server, as a loader that knows its servers keeps them)."""
    registered = {sid: sid for sid in ids}
    return [Tool(registered[entry["server"]], entry["name"]) for entry in json.loads(text)]


def _loaded(text: str) -> list[Tool]:
    """The tools of a JSON listing, made in order as it is read: one server id
    object per server, one fresh name per tool."""
    tools: list[Tool] = []
    for server in json.loads(text):
        sid = server["server"]
        tools.extend(Tool(sid, tool["name"]) for tool in server["tools"])
    return tools


def _disguise(rng: random.Random, text: str) -> str:
    """Other case and separators than the name: only the loose fold still matches."""
    swapped = "".join(rng.choice("-._") if c in "-._" else c for c in text)
    return swapped.upper() if rng.random() < 0.5 else swapped.title()


def patterns(n: int, option: str, tools: list[Tool], seed: int = 0) -> list[Any]:
    """``n`` patterns for ``option`` ("include" or "exclude") that hit ``tools``."""
    rng = random.Random(f"patterns-{n}-{option}-{seed}")
    loose = option == "exclude"
    out: list[Any] = []
    seen: set[Any] = set()

    def pick() -> Tool:
        return tools[rng.randrange(len(tools))]

    def word_of(name: str) -> str:
        parts = [p for p in re.split(r"[-._/:]", name) if p]
        return rng.choice(parts) if parts else name

    while len(out) < n:
        tool = pick()
        kind = rng.randrange(100)
        sid, name = tool.server_id, tool.name
        if "/" in sid or not name:
            continue
        if kind < 1:
            pattern: Any = (sid, re.compile(rf"^{re.escape(word_of(name)[:3])}.*_v\d$"))
        elif kind < 30:
            pattern = f"{sid}/{name}"
        elif kind < 38:
            pattern = f"{sid}/*"
        elif kind < 50:
            pattern = f"{name[: max(1, len(name) // 2)]}*"
        elif kind < 62:
            pattern = f"*{name[len(name) // 2:]}"
        elif kind < 72:
            pattern = f"*{word_of(name)}{rng.choice(['', '_', '-'])}{rng.randrange(100)}*"
        elif kind < 80:
            pattern = f"{name[:2]}*{word_of(name)}*{name[-2:]}"
        elif kind < 95:
            pattern = name
        else:
            pattern = f"*/{name}"
        if isinstance(pattern, str) and loose and kind >= 30 and kind < 95:
            pattern = _disguise(rng, pattern) if "/" not in pattern else pattern
        if isinstance(pattern, str) and (":" in pattern.split("/", 1)[0] and "/" in pattern):
            continue
        key = pattern if isinstance(pattern, str) else (pattern[0], pattern[1].pattern)
        if key in seen:
            continue
        seen.add(key)
        out.append(pattern)
    return out


def _role_gate(tool: Tool, ctx: dict[str, Any]) -> bool:
    """Exclude function: write tools are hidden from viewers."""
    return ctx["role"] == "viewer" and tool.name[:1] in "cCuUdD"


def _flaky(tool: Tool, ctx: dict[str, Any]) -> bool:
    """Exclude function that raises for some tools (they fail closed: hidden)."""
    if len(tool.name) % 17 == 0:
        raise RuntimeError("policy service unavailable")
    return False


def _owner(tool: Tool, ctx: dict[str, Any]) -> bool:
    """Include function: a user sees the servers they own."""
    return tool.server_id.endswith(str(ctx["user_id"] % 10))


def dynamic_patterns() -> dict[str, list[Any]]:
    """Function patterns that read ``ctx`` (a user id and role), one that raises."""
    return {"include": [_owner], "exclude": [_role_gate, _flaky]}


def contexts() -> list[dict[str, Any]]:
    return [{"user_id": uid, "role": role} for uid in (1, 2, 3) for role in ("viewer", "admin")]
