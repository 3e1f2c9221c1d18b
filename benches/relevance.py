"""The ranked tool search: how well it finds the tools a task needs, and how fast.

    python benches/relevance.py                      # recall table (when a dataset is found) and timings
    python benches/relevance.py --data DIR           # a dataset in LiveMCPBench's format
    python benches/relevance.py --skip-timing        # the recall table alone

**Quality.** A dataset in LiveMCPBench's format: ``catalog.json``
(``{server_id: [MCP tool definitions]}``) and a task file (``tasks.json``, or
every ``tasks*.json``): a list of ``{task_id, question, tools}``, ``tools``
being the names of the tools the task needs. For each method, Recall@k (the
share of a task's needed tool names among the first k tools returned,
averaged over the tasks) for k = 5, 10, 20, and how many tools it returns.
The tasks are also split in two halves (sorted by the SHA-256 of their id,
then taken alternately): A, on which the ranking's defaults were chosen, and
B, which checks them. Methods:

* ``substring``: every tool whose name or description holds one of the
  question's words (3 characters or more, stop words left out), ignoring
  case: the union of the seed's discover search over the words, in catalog
  order;
* ``plain BM25``: Okapi BM25 (k1 = 1.5, b = 0.75) over name and description
  as one text, lower-cased runs of letters and digits, stop words left out
  of the query;
* ``ToolIndex``: the package's ranking with its defaults, and with one part
  of it off at a time: server evidence, the synonyms, the path words (a path
  in the question asking for "file" and "path"), and the servers' own
  saturation (``server_k1`` set to the tools' ``k1``).

Without a dataset (none at the given path, or at ``../shared/data/livemcpbench/``
beside the repository by default) the table is skipped, and said so.

**Speed.** A synthetic catalog of 100,000 tools (``--tools``; 2,000 servers,
Zipf-distributed words, 5% of descriptions in Chinese), in two layouts: the
servers' tools interleaved, and each server's together (a catalog built while
reading one server after another). The median time to build the index and
to answer a query (the best 20), in paired rounds, against:

* a pure-Python BM25 with an inverted index (``plain BM25`` above): the
  targets, build under 1 s and a query under 5 ms, each at least 20x it;
* the libraries a user might pick instead, when installed (``pip install
  .[search-baselines]``, part of ``.[bench]``; said so when not): tantivy-py (the Tantivy engine, in Rust: an
  index in memory, written on two threads) and bm25s (BM25 on NumPy arrays),
  each over name and description as one text with its own tokenizer, its
  query's tokenizing timed too; the target, to be faster. They index less
  than ToolIndex does: no title, no server documents, no camelCase, no
  synonyms.
"""

from __future__ import annotations

import abc
import argparse
import functools
import hashlib
import heapq
import json
import math
import os
import pathlib
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from toolfilter_fast import _core
from toolfilter_fast.bench.runner import machine
from toolfilter_fast.relevance import Ranking, ToolIndex

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "livemcpbench"
KS = (5, 10, 20)
STOPWORDS = frozenset(_core.search_stopwords())

Task = dict[str, Any]


# --- the dataset --------------------------------------------------------------------

def load_dataset(folder: pathlib.Path) -> tuple[list[dict[str, Any]], list[Task]] | None:
    """The catalog's tools (each with its ``server_id``) and the tasks; None
    when the folder holds no such dataset."""
    catalog_file = folder / "catalog.json"
    task_files = [folder / "tasks.json"] if (folder / "tasks.json").is_file() else sorted(
        folder.glob("tasks*.json"))
    if not catalog_file.is_file() or not task_files:
        return None
    catalog = json.loads(catalog_file.read_text(encoding="utf-8"))
    tools = [{**tool, "server_id": server} for server, listed in catalog.items() for tool in listed]
    tasks: list[Task] = []
    for path in task_files:
        tasks.extend(json.loads(path.read_text(encoding="utf-8")))
    return tools, tasks


def halves(tasks: Sequence[Task]) -> tuple[list[Task], list[Task]]:
    """Half A (tuning) and half B (check): by the SHA-256 of the task id, alternately."""
    ordered = sorted(tasks, key=lambda t: hashlib.sha256(str(t["task_id"]).encode()).hexdigest())
    return ordered[0::2], ordered[1::2]


# --- the methods --------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def substring_union(tools: Sequence[dict[str, Any]], question: str) -> list[int]:
    """The seed's discover search over each word of the question, united."""
    needles = {w for w in words(question) if len(w) >= 3 and w not in STOPWORDS}
    found = []
    for i, tool in enumerate(tools):
        hay = f"{tool.get('name') or ''}\n{tool.get('description') or ''}".lower()
        if any(needle in hay for needle in needles):
            found.append(i)
    return found


class PlainBM25:
    """Okapi BM25 in pure Python, with an inverted index: the baseline."""

    def __init__(self, tools: Sequence[dict[str, Any]], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.postings: dict[str, list[tuple[int, int]]] = {}
        self.lengths: list[int] = []
        for i, tool in enumerate(tools):
            text = f"{tool.get('name') or ''} {tool.get('description') or ''}"
            counts: dict[str, int] = {}
            tokens = words(text)
            for token in tokens:
                counts[token] = counts.get(token, 0) + 1
            for token, count in counts.items():
                self.postings.setdefault(token, []).append((i, count))
            self.lengths.append(len(tokens))
        self.total = len(self.lengths)
        self.average = sum(self.lengths) / self.total if self.total else 0.0

    def rank(self, query: str, limit: int) -> list[int]:
        scores: dict[int, float] = {}
        for term in dict.fromkeys(w for w in words(query) if w not in STOPWORDS):
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (self.total - len(posting) + 0.5) / (len(posting) + 0.5))
            for doc, tf in posting:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[doc] / self.average)
                scores[doc] = scores.get(doc, 0.0) + idf * tf * (self.k1 + 1) / (tf + norm)
        best = heapq.nsmallest(limit, scores.items(), key=lambda item: (-item[1], item[0]))
        return [doc for doc, _ in best]


Method = Callable[[str], list[int]]


def methods(tools: Sequence[dict[str, Any]]) -> dict[str, Method]:
    plain = PlainBM25(tools)
    ours = ToolIndex(tools)
    no_servers = ToolIndex(tools, Ranking(server_evidence=0.0))
    no_synonyms = ToolIndex(tools, Ranking(synonyms=0.0))
    no_paths = ToolIndex(tools, Ranking(path_words=False))
    one_k1 = ToolIndex(tools, Ranking(server_k1=Ranking().k1))
    return {
        "substring": lambda q: substring_union(tools, q),
        "plain BM25": lambda q: plain.rank(q, max(KS)),
        "ToolIndex, server evidence off": lambda q: no_servers.rank(q, max(KS), matched_only=True),
        "ToolIndex, synonyms off": lambda q: no_synonyms.rank(q, max(KS), matched_only=True),
        "ToolIndex, path words off": lambda q: no_paths.rank(q, max(KS), matched_only=True),
        "ToolIndex, servers at the tools' k1": lambda q: one_k1.rank(q, max(KS), matched_only=True),
        "ToolIndex (defaults)": lambda q: ours.rank(q, max(KS), matched_only=True),
    }


def recall(found: Sequence[str], needed: Sequence[str], k: int | None) -> float:
    want = set(needed)
    return len(want & set(found[:k] if k is not None else found)) / len(want) if want else 0.0


def recall_rows(tools: Sequence[dict[str, Any]],
                tasks: Sequence[Task]) -> tuple[list[str], dict[tuple[str, str], list[float]]]:
    """The Markdown rows (each method on all tasks, half A and half B), and the
    Recall@k of each (k in ``KS``) by ``(method, part)``."""
    half_a, half_b = halves(tasks)
    names = [str(tool.get("name")) for tool in tools]
    rows = []
    measured: dict[tuple[str, str], list[float]] = {}
    for label, method in methods(tools).items():
        found = {t["task_id"]: [names[i] for i in method(t["question"])] for t in tasks}
        for part, chosen in (("all", tasks), ("A", half_a), ("B", half_b)):
            if not chosen:
                continue
            cells = [statistics.fmean(recall(found[t["task_id"]], t["tools"], k) for t in chosen)
                     for k in KS]
            measured[label, part] = cells
            every = statistics.fmean(recall(found[t["task_id"]], t["tools"], None) for t in chosen)
            sizes = [len(found[t["task_id"]]) for t in chosen]
            rows.append(f"| {label} | {part} ({len(chosen)}) | "
                        + " | ".join(f"{c:.3f}" for c in cells)
                        + f" | {every:.3f} | {statistics.fmean(sizes):.1f} | "
                        f"{statistics.median(sizes):g} |")
    return rows, measured


#: The issue's targets for the defaults over all tasks: Recall@k at least this.
RECALL_TARGETS = {10: 0.55, 20: 0.70}


def target_rows(measured: dict[tuple[str, str], list[float]]) -> list[str]:
    """The defaults' Recall@10 and @20 over all the tasks (as ``recall_rows``
    measured them), against the targets."""
    rows = ["| target (ToolIndex defaults, all tasks) | measured | met? |", "| --- | ---: | --- |"]
    for k, aim in RECALL_TARGETS.items():
        value = measured["ToolIndex (defaults)", "all"][KS.index(k)]
        rows.append(f"| Recall@{k} >= {aim:.2f} | {value:.3f} | "
                    f"{'met' if value >= aim else 'missed'} |")
    return rows


RECALL_HEADER = [
    "| method | tasks | Recall@5 | Recall@10 | Recall@20 | recall of all returned "
    "| mean returned | median returned |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
]


# --- speed --------------------------------------------------------------------------

def synthetic_catalog(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` tools of 2,000 servers (fewer for a small count): names of a verb
    and one or two nouns, descriptions of 8 to 30 Zipf-distributed words, one
    in twenty in Chinese, one to four parameters."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ren", "to", "vas", "qu", "el", "dar", "in", "po", "sha"]
    vocabulary = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
                         for _ in range(8000)})
    weights = [1.0 / (rank + 1) for rank in range(len(vocabulary))]
    verbs = ["get", "list", "create", "update", "delete", "search", "read", "write", "find"]
    han = [chr(0x4E00 + rng.randrange(3000)) for _ in range(600)]
    servers = [f"{rng.choice(vocabulary)}-mcp-{s}" for s in range(min(2000, max(1, count // 50)))]
    tools = []
    for i in range(count):
        nouns = rng.choices(vocabulary, weights, k=rng.randint(1, 2))
        if rng.random() < 0.05:
            description = "".join(rng.choices(han, k=rng.randint(10, 40)))
        else:
            description = " ".join(rng.choices(vocabulary, weights, k=rng.randint(8, 30)))
        properties = {rng.choice(vocabulary): {"type": "string",
                                               "description": " ".join(rng.choices(vocabulary, k=4))}
                      for _ in range(rng.randint(1, 4))}
        tools.append({"name": "_".join([rng.choice(verbs), *nouns]) + f"_{i}",
                      "description": description, "server_id": servers[i % len(servers)],
                      "inputSchema": {"type": "object", "properties": properties}})
    return tools


def synthetic_queries(tools: Sequence[dict[str, Any]], count: int, seed: int = 11) -> list[str]:
    """Questions made of words of random tools' descriptions, among filler words."""
    rng = random.Random(seed)
    filler = ["please", "help", "me", "find", "the", "a", "and", "with", "for", "my", "latest"]
    out = []
    for _ in range(count):
        picked = rng.sample(range(len(tools)), 3)
        words_of = [w for i in picked for w in str(tools[i]["description"]).split()[:4]]
        out.append(" ".join(rng.sample(words_of + filler, min(12, len(words_of) + 5))))
    return out


def in_server_order(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same tools with each server's together, servers in order of first
    appearance: a catalog built while reading one server after another."""
    first: dict[str, int] = {}
    for tool in tools:
        first.setdefault(tool["server_id"], len(first))
    return sorted(tools, key=lambda tool: first[tool["server_id"]])


def _seconds(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


class Alternative(abc.ABC):
    """A library a user might pick instead, indexing name and description as
    one text with its own tokenizer: ``build(texts)`` and then ``rank(query,
    limit)``, the query's tokenizing included."""

    name: str

    @abc.abstractmethod
    def build(self, texts: Sequence[str]) -> None:
        """Indexes ``texts``, replacing what was indexed."""

    @abc.abstractmethod
    def rank(self, query: str, limit: int) -> list[int]:
        """The places in ``texts`` of the best ``limit`` for ``query``, best first."""


class Tantivy(Alternative):
    """tantivy-py: the Tantivy search engine (Rust), an index in memory, BM25,
    its default tokenizer, written on two threads; the query parsed leniently."""

    name = "tantivy-py (Rust engine)"

    def __init__(self) -> None:
        import tantivy

        self._tantivy = tantivy
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("text", stored=False)
        builder.add_integer_field("place", stored=True, fast=True)
        self._schema = builder.build()

    def build(self, texts: Sequence[str]) -> None:
        index = self._tantivy.Index(self._schema)
        writer = index.writer(heap_size=256_000_000, num_threads=2)
        for place, text in enumerate(texts):
            writer.add_document(self._tantivy.Document(text=text, place=place))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        self._index, self._searcher = index, index.searcher()

    def rank(self, query: str, limit: int) -> list[int]:
        parsed, _errors = self._index.parse_query_lenient(query, ["text"])
        hits = self._searcher.search(parsed, limit).hits
        return [self._searcher.doc(address)["place"][0] for _score, address in hits]


class Bm25s(Alternative):
    """bm25s: BM25 on NumPy arrays, its tokenizer with English stop words."""

    name = "bm25s (NumPy)"

    def __init__(self) -> None:
        import bm25s  # type: ignore[import-untyped]

        self._bm25s = bm25s

    def build(self, texts: Sequence[str]) -> None:
        tokens = self._bm25s.tokenize(list(texts), stopwords="en", show_progress=False)
        self._model = self._bm25s.BM25()
        self._model.index(tokens, show_progress=False)
        self._count = len(texts)

    def rank(self, query: str, limit: int) -> list[int]:
        tokens = self._bm25s.tokenize([query], stopwords="en", show_progress=False)
        # It asks for no more than there are documents.
        docs, _scores = self._model.retrieve(tokens, k=min(limit, self._count),
                                             show_progress=False)
        return [int(doc) for doc in docs[0]]


def alternatives() -> tuple[list[Alternative], list[str]]:
    """The alternatives installed here, and the names of those that are not."""
    found: list[Alternative] = []
    missing = []
    for make, package in ((Tantivy, "tantivy"), (Bm25s, "bm25s")):
        try:
            found.append(make())
        except ImportError:
            missing.append(package)
    return found, missing


def _row(what: str, ours: list[float], theirs: list[float], target: str,
         met: Callable[[float, float], bool]) -> str:
    mine, other = statistics.median(ours), statistics.median(theirs)
    ratio = statistics.median(b / a for a, b in zip(ours, theirs, strict=True))
    return (f"| {what} | {mine * 1e3:.2f} ms | {other * 1e3:.2f} ms | {ratio:.1f}x | "
            f"{target}: {'met' if met(mine, ratio) else 'missed'} |")


def layout_rows(layout: str, tools: Sequence[dict[str, Any]], asked: Sequence[str],
                found: Sequence[Alternative], rounds: int) -> list[str]:
    """One layout's rows: paired rounds of ToolIndex against the pure-Python
    BM25 (the targets) and against each alternative in ``found``."""
    texts = [f"{tool['name']} {tool['description']}" for tool in tools]
    build_fast, build_base = [], []
    builds: dict[str, list[float]] = {other.name: [] for other in found}
    for _ in range(rounds):
        build_fast.append(_seconds(lambda: ToolIndex(tools)))
        build_base.append(_seconds(lambda: PlainBM25(tools)))
        for other in found:
            builds[other.name].append(_seconds(functools.partial(other.build, texts)))
    fast, base = ToolIndex(tools), PlainBM25(tools)
    query_fast, query_base = [], []
    queries: dict[str, list[float]] = {other.name: [] for other in found}
    for query in asked:
        query_fast.append(_seconds(functools.partial(fast.rank, query, 20)))
        query_base.append(_seconds(functools.partial(base.rank, query, 20)))
        for other in found:
            queries[other.name].append(_seconds(functools.partial(other.rank, query, 20)))
    where = f"{len(tools):,} tools, {layout}"
    rows = [
        _row(f"build the index ({rounds} rounds), {where}; vs pure-Python BM25", build_fast,
             build_base, "under 1 s and >= 20x", lambda mine, ratio: mine < 1.0 and ratio >= 20),
        _row(f"one query, the best 20 ({len(asked)} queries), {where}; vs pure-Python BM25",
             query_fast, query_base, "under 5 ms and >= 20x",
             lambda mine, ratio: mine < 0.005 and ratio >= 20),
    ]
    for other in found:
        rows.append(_row(f"build the index, {where}; vs {other.name}", build_fast,
                         builds[other.name], "faster (>= 1x)", lambda _mine, ratio: ratio >= 1))
        rows.append(_row(f"one query, the best 20, {where}; vs {other.name}", query_fast,
                         queries[other.name], "faster (>= 1x)", lambda _mine, ratio: ratio >= 1))
    return rows


def speed_rows(count: int, rounds: int, queries: int) -> list[str]:
    """The timing table: ``layout_rows`` with the servers' tools interleaved,
    and with each server's together; then which alternatives are missing."""
    interleaved = synthetic_catalog(count)
    asked = synthetic_queries(interleaved, queries)
    found, missing = alternatives()
    rows = ["| workload | ToolIndex (median) | the other (median) | median paired ratio "
            "| target |", "| --- | ---: | ---: | ---: | --- |"]
    rows += layout_rows("servers interleaved", interleaved, asked, found, rounds)
    rows += layout_rows("servers in order", in_server_order(interleaved), asked, found, rounds)
    if missing:
        rows += ["", f"Not installed, so not compared: {', '.join(missing)} "
                 "(`pip install .[search-baselines]` brings them)."]
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=pathlib.Path, default=DEFAULT_DATA,
                        help="a folder with catalog.json and tasks.json (or tasks*.json)")
    parser.add_argument("--tools", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--skip-timing", action="store_true")
    args = parser.parse_args(argv)
    given = list(sys.argv[1:] if argv is None else argv)
    print(f"Command: `{' '.join(['python benches/relevance.py', *given])}`\n")
    print(f"Machine: {machine()}\n")
    dataset = load_dataset(args.data)
    if dataset is None:
        print(f"No dataset in LiveMCPBench's format (catalog.json, tasks.json) at {args.data}: "
              "the recall table is skipped.")
    else:
        tools, tasks = dataset
        servers = len({tool["server_id"] for tool in tools})
        print(f"Recall on {len(tasks)} tasks over {len(tools)} tools of {servers} servers "
              f"(half A: defaults chosen on it; half B: the check)\n")
        rows, measured = recall_rows(tools, tasks)
        print("\n".join([*RECALL_HEADER, *rows]))
        print()
        print("\n".join(target_rows(measured)))
    if not args.skip_timing:
        print()
        print("\n".join(speed_rows(args.tools, args.rounds, args.queries)))
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"\nLoad average {load[0]:.2f} (1 min) and {load[2]:.2f} (15 min) at the end.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
