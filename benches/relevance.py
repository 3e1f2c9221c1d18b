"""The ranked tool search: how well it finds the tools a task needs, measured by
cross-validation, and how fast it is.

    python benches/relevance.py                      # recall (when a dataset is found) and timings
    python benches/relevance.py --data DIR           # a dataset in LiveMCPBench's format
    python benches/relevance.py --skip-timing        # recall alone
    python benches/relevance.py --skip-semantic      # without the embedding scorer
    python benches/relevance.py --scorer fastembed:DIR:384 --scorer model2vec:DIR
                                                     # other local models, measured alike

**Quality.** A dataset in LiveMCPBench's format: ``catalog.json``
(``{server_id: [MCP tool definitions]}``) and a task file (``tasks.json``, or
every ``tasks*.json``): a list of ``{task_id, question, tools}``, ``tools``
being the names of the tools the task needs. Recall@k is counted two ways:
*pooled*, the needed tools found among the first k over all needed tools of the
tasks counted, and *per task*, the share found averaged over the tasks.

The protocol is k-fold cross-validation by task (``--folds``, 6 by default):
the tasks are sorted by the SHA-256 of their id and dealt into the folds in
turn. Every figure is one per fold, and the tables give their mean, standard
deviation and range:

* **Fixed methods** (nothing chosen on the data): each fold is held out by
  construction. The substring union of the question's words, plain BM25, the
  package's defaults, each part of the ranking off in turn, and the structural
  variants measured and left out (servers first, a task cut into its steps);
  with the embedding scorer (``.[semantic]``), WordLlama alone and mixed in.
* **Chosen by cross-validation**: for each fold, the options that do best on
  the other folds (the mean of pooled Recall@10 and @20) over a small grid
  (:data:`GRID`), measured on the held-out fold; then the same with one part
  of the ranking held off, so that each part's contribution is its held-out
  gain. The options chosen on all the tasks are the package's defaults. The
  embedding scorer's weight and fusion are chosen the same way (for WordLlama
  and for each ``--scorer``), and so are two general methods measured and left
  out: pseudo-relevance feedback (the text of the first tools, or of the first
  tool's server, asked again and added at a weight; none among the choices)
  the weight of the steps' scores against the whole question's, and a field
  (the name, the description) scored on its own and added.
* **More methods** (:func:`general_report`), each chosen on the training folds
  and measured on the held-out one, against what it would replace: a wider grid
  of k1, b and field weights (:data:`WIDE_GRID`), and the grid's size chosen by
  an inner cross-validation inside each training fold; a length normalisation
  per field, BM25+ and query likelihood with Dirichlet smoothing, scored through
  the reference (:func:`tweaked_index`); for the embedding scorer, each step
  embedded, server embeddings (the mean of their tools'), a z-score mix, and
  the ranking's options and the fusion chosen together in each training fold
  (nested).

Without a dataset (none at the given path, or at ``../shared/data/livemcpbench/``
beside the repository by default) the recall tables are skipped, and said so.

**Speed.** A synthetic catalog of 100,000 tools (``--tools``; 2,000 servers,
Zipf-distributed words, 5% of descriptions in Chinese), in two layouts: the
servers' tools interleaved, and each server's together. The median time to
build the index and to answer a query (the best 20), in paired rounds,
against a pure-Python BM25 with an inverted index (``plain BM25`` above) and
the libraries a user might pick instead, when installed (``pip install
.[search-baselines]``; said so when not): tantivy-py (the Tantivy engine, in
Rust: an index in memory, written on two threads) and bm25s (BM25 on NumPy
arrays), each over name and description as one text with its own tokenizer,
its query's tokenizing timed too; the target, to be faster. The embedding
scorer's cost (loading, embedding the catalog, a query, memory) is timed on
``--semantic-tools`` synthetic tools, and each ``--scorer``'s on ``--scorer-tools``.
"""

from __future__ import annotations

import abc
import argparse
import dataclasses
import functools
import hashlib
import heapq
import itertools
import json
import math
import os
import pathlib
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from toolfilter_fast import _core
from toolfilter_fast.bench.runner import machine
from toolfilter_fast.reference import relevance as reference_relevance
from toolfilter_fast.relevance import Ranking, ToolIndex

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "livemcpbench"
KS = (5, 10, 20)
FOLDS = 6
STOPWORDS = frozenset(_core.search_stopwords())

Task = dict[str, Any]
#: A method: a question -> the places of the tools it returns, best first.
Method = Callable[[str], list[int]]
#: What a method returned for each task: task id -> tool names, best first.
Found = dict[Any, list[str]]


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


def folds(tasks: Sequence[Task], count: int = FOLDS) -> list[list[Task]]:
    """The tasks dealt into ``count`` folds in turn, sorted by the SHA-256 of their id
    (fewer folds when there are fewer tasks)."""
    ordered = sorted(tasks, key=lambda t: hashlib.sha256(str(t["task_id"]).encode()).hexdigest())
    count = max(1, min(count, len(ordered)))
    return [ordered[i::count] for i in range(count)]


# --- recall -------------------------------------------------------------------------

def recall(found: Sequence[str], needed: Sequence[str], k: int | None) -> float:
    """One task's share of its needed tools among the first ``k`` found (all when None)."""
    want = set(needed)
    return len(want & set(found[:k] if k is not None else found)) / len(want) if want else 0.0


def pooled_recall(found: Found, tasks: Sequence[Task], k: int) -> float:
    """The needed tools found among each task's first ``k``, over all needed tools."""
    hits = total = 0
    for task in tasks:
        want = set(task["tools"])
        hits += len(want & set(found[task["task_id"]][:k]))
        total += len(want)
    return hits / total if total else 0.0


def task_recall(found: Found, tasks: Sequence[Task], k: int) -> float:
    """Recall@k averaged over the tasks."""
    return statistics.fmean(recall(found[t["task_id"]], t["tools"], k) for t in tasks) \
        if tasks else 0.0


def fold_cells(found: Found, fold: Sequence[Task]) -> list[float]:
    """Pooled Recall@k for each k of :data:`KS`, then per-task Recall@k."""
    return ([pooled_recall(found, fold, k) for k in KS]
            + [task_recall(found, fold, k) for k in KS])


def objective(found: Found, tasks: Sequence[Task]) -> float:
    """What the cross-validation maximises: the mean of pooled Recall@10 and @20."""
    return (pooled_recall(found, tasks, 10) + pooled_recall(found, tasks, 20)) / 2


def run(method: Method, tools: Sequence[dict[str, Any]], tasks: Sequence[Task]) -> Found:
    names = [str(tool.get("name")) for tool in tools]
    return {t["task_id"]: [names[i] for i in method(t["question"])] for t in tasks}


class Measured:
    """One row: per fold, the cells of :func:`fold_cells` (and for a chosen
    method, the candidate each fold chose)."""

    def __init__(self, label: str, per_fold: list[list[float]]) -> None:
        self.label, self.per_fold = label, per_fold
        self.picks: list[str] = []

    def column(self, i: int) -> list[float]:
        return [cells[i] for cells in self.per_fold]

    def mean(self, i: int) -> float:
        return statistics.fmean(self.column(i))


def fixed(label: str, found: Found, parts: Sequence[Sequence[Task]]) -> Measured:
    return Measured(label, [fold_cells(found, fold) for fold in parts])


def chosen(label: str, candidates: Sequence[tuple[str, Found]],
           parts: Sequence[Sequence[Task]]) -> Measured:
    """Each fold held out in turn: the candidate with the best :func:`objective`
    on the other folds (the first one on a tie), measured on the held-out fold."""
    out = Measured(label, [])
    for i, fold in enumerate(parts):
        train = [t for j, other in enumerate(parts) if j != i for t in other]
        name, found = pick(candidates, train)
        out.per_fold.append(fold_cells(found, fold))
        out.picks.append(name)
    return out


def pick(candidates: Sequence[tuple[str, Found]], tasks: Sequence[Task]) -> tuple[str, Found]:
    """The candidate with the best :func:`objective` on ``tasks`` (the first on a tie)."""
    best, value = candidates[0], -math.inf
    for candidate in candidates:
        score = objective(candidate[1], tasks)
        if score > value + 1e-12:
            best, value = candidate, score
    return best


def _spread(values: Sequence[float]) -> str:
    sd = statistics.pstdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} ± {sd:.3f} [{min(values):.2f}, {max(values):.2f}]"


TABLE_HEADER = [
    "| method | pooled R@5 | pooled R@10 | pooled R@20 | per task R@5 | per task R@10 "
    "| per task R@20 |",
    "| --- | --- | --- | --- | ---: | ---: | ---: |",
]


def table_row(row: Measured) -> str:
    cells = [_spread(row.column(i)) for i in range(3)]
    cells += [f"{row.mean(i):.3f}" for i in range(3, 6)]
    return f"| {row.label} | " + " | ".join(cells) + " |"


def gain_cells(row: Measured, base: Measured) -> list[str]:
    """``base`` against ``row``, fold by fold, for pooled Recall@10 and @20: the
    mean difference and in how many folds ``base`` is higher, lower."""
    cells = []
    for i in (1, 2):
        diffs = [a - b for a, b in zip(base.column(i), row.column(i), strict=True)]
        up, down = sum(d > 1e-12 for d in diffs), sum(d < -1e-12 for d in diffs)
        cells.append(f"{statistics.fmean(diffs):+.3f} ({up} up, {down} down)")
    return cells


def gain_row(row: Measured, base: Measured) -> str:
    """What ``base`` adds over ``row`` (:func:`gain_cells`), as a table row."""
    return f"| {row.label} | " + " | ".join(gain_cells(row, base)) + " |"


def gain_text(row: Measured, base: Measured) -> str:
    """What ``row`` adds over ``base``, fold by fold, as a sentence's end."""
    at10, at20 = gain_cells(base, row)
    return f"pooled Recall@10 {at10}, @20 {at20}"


GAIN_HEADER = [
    "| the part held off | what it adds, pooled R@10 (folds) | what it adds, pooled R@20 (folds) |",
    "| --- | --- | --- |",
]


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


def _best(scores: Sequence[float], limit: int, matched_only: bool = True) -> list[int]:
    """The places of the best ``limit`` scores, best first, ties in input order."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return [i for i in order if scores[i] > 0 or not matched_only][:limit]


def by_steps_max(tools: Sequence[dict[str, Any]]) -> Method:
    """The structural variant: the whole question and each of its steps (as
    the package cuts them) ranked on their own, each tool's scores merged by
    their maximum rather than their sum (``Ranking.steps``)."""
    index = ToolIndex(tools, dataclasses.replace(Ranking(), steps=False))

    def method(question: str) -> list[int]:
        each = [step for step in _core.search_steps(question) if index.has_terms(step)]
        per = [index.scores(part) for part in ([question, *each] if len(each) > 1 else [question])]
        return _best([max(column) for column in zip(*per, strict=True)], max(KS))
    return method


def servers_first(tools: Sequence[dict[str, Any]], ranking: Ranking, count: int) -> Method:
    """The structural variant: the servers ranked first (each as one document,
    as server evidence scores them), then the tools of the best ``count``
    servers ahead of the rest, each group by the tools' own scores."""
    own = ToolIndex(tools, dataclasses.replace(ranking, server_evidence=0.0))
    whole = ToolIndex(tools, ranking)
    server_of = [tool.get("server_id") for tool in tools]

    def method(question: str) -> list[int]:
        mine, total = own.scores(question), whole.scores(question)
        server_part: dict[Any, float] = {}
        for i, server in enumerate(server_of):
            server_part[server] = max(server_part.get(server, 0.0), total[i] - mine[i])
        best = {s for s, _ in sorted(server_part.items(), key=lambda kv: -kv[1])[:count]
                if server_part[s] > 0}
        return _best([total[i] + (10.0 if server_of[i] in best else 0.0)
                      for i in range(len(tools))], max(KS))
    return method


def feedback_text(tool: dict[str, Any]) -> str:
    """What pseudo-relevance feedback reads of a tool: its name and description."""
    return f"{tool.get('name') or ''} {tool.get('description') or ''}"


def with_feedback(tools: Sequence[dict[str, Any]], source: str, depth: int,
                  weight: float) -> Method:
    """The structural variant, pseudo-relevance feedback: the question ranked
    as the defaults rank it, then the text of what it found first (``source``
    ``"tools"``: the first ``depth`` tools; ``"server"``: every tool of the
    first tool's server) asked as a second query (not cut into steps), its
    scores, scaled to its best, added at ``weight``."""
    first = ToolIndex(tools)
    second = ToolIndex(tools, dataclasses.replace(Ranking(), steps=False))
    server_of = [tool.get("server_id") for tool in tools]

    def method(question: str) -> list[int]:
        scores = first.scores(question)
        top = _best(scores, depth)
        if not top:
            return []
        if source == "server":
            top = [i for i, s in enumerate(server_of) if s == server_of[top[0]]]
        extra = second.scores(" ".join(feedback_text(tools[i]) for i in top))
        best = max(extra) or 1.0
        return _best([a + weight * b / best for a, b in zip(scores, extra, strict=True)],
                     max(KS))
    return method


#: The feedback the cross-validation chooses among (none among them):
#: (source, depth, weight).
FEEDBACK = (("tools", 1, 0.25), ("tools", 1, 0.5), ("tools", 3, 0.25), ("tools", 3, 0.5),
            ("server", 1, 0.25), ("server", 1, 0.5))


def weighted_steps(tools: Sequence[dict[str, Any]], weight: float) -> Method:
    """The structural variant, query-side weighting of the steps: the whole
    question's scores plus ``weight`` times each step's (at ``weight`` 1, the
    package's own sum, ``Ranking.steps``)."""
    flat = ToolIndex(tools, dataclasses.replace(Ranking(), steps=False))

    def method(question: str) -> list[int]:
        total = flat.scores(question)
        each = [step for step in _core.search_steps(question) if flat.has_terms(step)]
        if len(each) > 1:
            for step in each:
                total = [a + weight * b for a, b in zip(total, flat.scores(step), strict=True)]
        return _best(total, max(KS))
    return method


#: The steps' weights the cross-validation chooses among (1: the package's).
STEP_WEIGHTS = (1.0, 0.25, 0.5, 1.5, 2.0)


def field_added(tools: Sequence[dict[str, Any]], field: str, weight: float) -> Method:
    """The structural variant, a field scored on its own: the defaults' scores
    plus ``weight`` times the tool's BM25 score over ``field`` alone (no
    server evidence), scaled to its best: a per-field sum beside BM25F's
    weighted counts."""
    whole = ToolIndex(tools)
    fields = {f: 0.0 for f in ("name", "title", "description", "server", "params")}
    alone = ToolIndex(tools, dataclasses.replace(
        Ranking(), server_evidence=0.0, **{**fields, field: 1.0}))

    def method(question: str) -> list[int]:
        extra = alone.scores(question)
        best = max(extra) or 1.0
        return _best([a + weight * b / best
                      for a, b in zip(whole.scores(question), extra, strict=True)], max(KS))
    return method


#: The fields scored on their own, and their weights, the cross-validation chooses among.
FIELD_SCORES = tuple((field, weight) for field in ("name", "description")
                     for weight in (0.25, 0.5, 1.0))


def feedback_label(source: str, depth: int) -> str:
    return (f"feedback from the first {depth} tool{'s' if depth > 1 else ''}"
            if source == "tools" else "feedback from the first tool's server")


def ranked(index: ToolIndex) -> Method:
    return lambda question: index.rank(question, max(KS), matched_only=True)


#: The options the cross-validation chooses among (the rest at the Ranking's
#: defaults): the description's weight against the name's 2, the server
#: evidence, the synonyms' weight, the servers' saturation and ``b``.
GRID: dict[str, tuple[Any, ...]] = {
    "description": (0.5, 1.0),
    "server_evidence": (1.0, 0.5, 1.5),
    "synonyms": (0.7, 0.5, 0.9),
    "server_k1": (3.0, 1.2),
    "b": (0.9, 0.75),
}

#: The parts of the ranking, each held off in turn: the options that turn it off.
PARTS: dict[str, dict[str, Any]] = {
    "steps": {"steps": False},
    "synonyms": {"synonyms": 0.0},
    "server evidence": {"server_evidence": 0.0},
    "path words": {"path_words": False},
    "servers' own saturation": {"server_k1": Ranking().k1},
    "field weights (name = description = 1)": {"name": 1.0, "description": 1.0},
}


def grid_rankings(held: dict[str, Any] | None = None) -> list[Ranking]:
    """Every Ranking of :data:`GRID` (first the defaults' values), with the options
    ``held`` fixed (a part held off)."""
    held = held or {}
    axes = {key: (held[key],) if key in held else values for key, values in GRID.items()}
    out = []
    for values in itertools.product(*axes.values()):
        options = dict(zip(axes, values, strict=True))
        out.append(Ranking(**{**options, **{k: v for k, v in held.items() if k not in axes}}))
    return list(dict.fromkeys(out))


def describe(ranking: Ranking) -> str:
    """The options of ``ranking`` that differ from the defaults."""
    base = Ranking()
    changed = [f"{f.name}={getattr(ranking, f.name)}" for f in dataclasses.fields(Ranking)
               if getattr(ranking, f.name) != getattr(base, f.name)]
    return ", ".join(changed) or "the defaults"


# --- the embedding scorer -----------------------------------------------------------

#: The scorer's weights and fusions the cross-validation chooses among.
SEMANTIC_WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5)


def rrf(lexical: Sequence[float], semantic: Sequence[float], weight: float,
        k: int = 60) -> list[float]:
    """Reciprocal rank fusion: ``(1 - weight) / (k + lexical rank) + weight /
    (k + semantic rank)``, a tool scoring 0 lexically having no lexical part."""
    def ranks(scores: Sequence[float]) -> list[int]:
        out = [0] * len(scores)
        for place, i in enumerate(sorted(range(len(scores)), key=lambda i: (-scores[i], i))):
            out[i] = place + 1
        return out
    lex, sem = ranks(lexical), ranks(semantic)
    return [((1 - weight) / (k + lex[i]) if lexical[i] > 0 else 0.0) + weight / (k + sem[i])
            for i in range(len(lexical))]


def zmix(lexical: Sequence[float], semantic: Sequence[float], weight: float) -> list[float]:
    """A mix calibrated by each side's spread (CombSUM of z-scores): ``(1 - weight) *
    z(lexical) + weight * z(semantic)``, each side less its mean over the tools and
    divided by its standard deviation (a side whose scores are all equal counts 0)."""
    def z(scores: Sequence[float]) -> list[float]:
        mean = statistics.fmean(scores) if scores else 0.0
        sd = statistics.pstdev(scores) if len(scores) > 1 else 0.0
        return [(s - mean) / sd if sd > 0 else 0.0 for s in scores]
    return [(1 - weight) * a + weight * b
            for a, b in zip(z(lexical), z(semantic), strict=True)]


def fuse(kind: str, weight: float, lexical: Sequence[float],
         semantic: Sequence[float]) -> list[float]:
    """The lexical and the embedding scores fused by ``kind``: ``"mix"`` (the
    package's :func:`~toolfilter_fast.relevance.options.mix_scores`), ``"rrf"``
    (:func:`rrf`) or ``"z"`` (:func:`zmix`)."""
    from toolfilter_fast.relevance.options import mix_scores

    if kind == "mix":
        # The scores are given: the "tools" only say how many there are.
        return mix_scores(lexical, lambda _q, _t: semantic, weight, "", range(len(lexical)))
    if kind == "rrf":
        return rrf(lexical, semantic, weight)
    return zmix(lexical, semantic, weight)


#: Scores per question: question -> one score per tool.
Scores = dict[str, list[float]]


def by_scores(scores: Scores, tools: Sequence[dict[str, Any]], tasks: Sequence[Task],
              matched_only: bool = False) -> Found:
    """What ranking every tool by ``scores`` finds for each task."""
    return run(lambda q: _best(scores[q], max(KS), matched_only), tools, tasks)


def fusion_candidates(tools: Sequence[dict[str, Any]], tasks: Sequence[Task], lexical: Scores,
                      semantic: Scores, kinds: Sequence[str] = ("mix", "rrf"),
                      prefix: str = "") -> list[tuple[str, Found]]:
    """``lexical`` fused with ``semantic`` by each of ``kinds`` at each weight of
    :data:`SEMANTIC_WEIGHTS`."""
    out = []
    for kind in kinds:
        for weight in SEMANTIC_WEIGHTS:
            fused = {q: fuse(kind, weight, lexical[q], semantic[q]) for q in lexical}
            out.append((f"{prefix}{kind} {weight}", by_scores(fused, tools, tasks)))
    return out


def question_scores(index: ToolIndex | Any, tasks: Sequence[Task]) -> Scores:
    return {t["question"]: list(index.scores(t["question"])) for t in tasks}


def semantic_candidates(tools: Sequence[dict[str, Any]], tasks: Sequence[Task],
                        index: ToolIndex, scorer: Any) -> dict[str, Found]:
    """The embedding scorer alone and mixed with ``index``'s scores at each
    weight of :data:`SEMANTIC_WEIGHTS`, by the package's mix and by reciprocal
    rank fusion."""
    scorer.embed_tools(tools)
    semantic = {t["question"]: list(scorer(t["question"], tools)) for t in tasks}
    out: dict[str, Found] = {"embedding alone": by_scores(semantic, tools, tasks)}
    out.update(fusion_candidates(tools, tasks, question_scores(index, tasks), semantic))
    return out


def offline_scorer() -> Any | None:
    """The scorer that works right after ``pip install .[semantic]``; None without it."""
    try:
        from toolfilter_fast.relevance.semantic import wordllama_scorer

        return wordllama_scorer()
    except ImportError:
        return None


#: The issue's targets, over held-out folds (pooled): Recall@k at least this.
LEXICAL_TARGETS = {10: 0.55, 20: 0.65}
SEMANTIC_TARGETS = {10: 0.60, 20: 0.70}


def target_rows(rows: Iterable[tuple[str, Measured, dict[int, float]]]) -> list[str]:
    out = ["| target (held-out folds, pooled) | measured (mean of the folds) | met? |",
           "| --- | ---: | --- |"]
    for what, row, targets in rows:
        for k, aim in targets.items():
            value = row.mean(KS.index(k))
            out.append(f"| {what}: Recall@{k} >= {aim:.2f} | {value:.3f} | "
                       f"{'met' if value >= aim else 'missed'} |")
    return out


def local_scorer(spec: str) -> tuple[str, Any]:
    """A scorer named on the command line, ``KIND:FOLDER`` (``model2vec:DIR``,
    ``fastembed:DIR:DIM`` for an ONNX folder of mean-pooled ``DIM``-dimension
    embeddings): its label and the scorer."""
    from toolfilter_fast.relevance import semantic

    kind, _, rest = spec.partition(":")
    if kind == "model2vec":
        return f"Model2Vec {pathlib.Path(rest).name}", semantic.model2vec_scorer(rest)
    if kind == "fastembed":
        folder, _, dim = rest.rpartition(":")
        if not folder or not dim.isdigit():
            raise SystemExit(f"--scorer {spec!r}: fastembed:FOLDER:DIM expected")
        return (f"fastembed {pathlib.Path(folder).name}",
                semantic.fastembed_scorer(folder, dim=int(dim), batch=16))
    raise SystemExit(f"--scorer {spec!r}: model2vec:FOLDER or fastembed:FOLDER:DIM expected")


def quality_report(tools: Sequence[dict[str, Any]], tasks: Sequence[Task], count: int,
                   semantic: bool, others: Sequence[tuple[str, Any]] = ()) -> list[str]:
    """The recall tables (see the module's docstring), as Markdown lines."""
    parts = folds(tasks, count)
    out = [f"Folds: {len(parts)} ({', '.join(str(len(p)) for p in parts)} tasks), "
           f"mean ± standard deviation [lowest, highest] over the folds.", ""]
    plain = PlainBM25(tools)
    defaults = ToolIndex(tools)
    rows = [
        fixed("substring union", run(lambda q: substring_union(tools, q), tools, tasks), parts),
        fixed("plain BM25", run(lambda q: plain.rank(q, max(KS)), tools, tasks), parts),
        fixed("ToolIndex (defaults)", run(ranked(defaults), tools, tasks), parts),
    ]
    for part, held in PARTS.items():
        index = ToolIndex(tools, dataclasses.replace(Ranking(), **held))
        rows.append(fixed(f"ToolIndex, {part} off", run(ranked(index), tools, tasks), parts))
    rows.append(fixed("servers first (the best 3 servers' tools ahead)",
                      run(servers_first(tools, Ranking(), 3), tools, tasks), parts))
    rows.append(fixed("steps merged by their maximum, not their sum",
                      run(by_steps_max(tools), tools, tasks), parts))
    scorer = offline_scorer() if semantic else None
    candidates: dict[str, Found] = {}
    if scorer is not None:
        candidates = semantic_candidates(tools, tasks, defaults, scorer)
        rows.append(fixed("WordLlama alone", candidates["embedding alone"], parts))
        weight = _default_scorer_weight()
        if f"mix {weight}" in candidates:
            rows.append(fixed(f"ToolIndex + WordLlama (mix, weight {weight})",
                              candidates[f"mix {weight}"], parts))
    other_rows: list[Measured] = []
    for label, other in others:
        found = semantic_candidates(tools, tasks, defaults, other)
        rows.append(fixed(f"{label} alone", found["embedding alone"], parts))
        other_rows.append(chosen(
            f"ToolIndex + {label}, weight and fusion chosen by cross-validation",
            [(name, f) for name, f in found.items() if name != "embedding alone"], parts))
    out += ["Fixed methods (nothing chosen on the data):", "", *TABLE_HEADER,
            *map(table_row, rows), ""]

    def procedure(held: dict[str, Any] | None) -> list[tuple[str, Found]]:
        return [(describe(r), run(ranked(ToolIndex(tools, r)), tools, tasks))
                for r in grid_rankings(held)]
    full_grid = procedure(None)
    full = chosen("ToolIndex, options chosen by cross-validation", full_grid, parts)
    held_rows = [chosen(f"{part}", procedure(held), parts) for part, held in PARTS.items()]
    no_feedback = ("no feedback", run(ranked(defaults), tools, tasks))
    feedback = [no_feedback] + [
        (f"{feedback_label(source, depth)}, weight {weight}",
         run(with_feedback(tools, source, depth, weight), tools, tasks))
        for source, depth, weight in FEEDBACK]
    with_fb = chosen("ToolIndex (defaults), pseudo-relevance feedback chosen by "
                     "cross-validation (none among the choices)", feedback, parts)
    steps_weighted = chosen(
        "ToolIndex (defaults), the steps' weight chosen by cross-validation",
        [(f"steps at {w}", run(weighted_steps(tools, w), tools, tasks)) for w in STEP_WEIGHTS],
        parts)
    fields_added = chosen(
        "ToolIndex (defaults), a field scored on its own chosen by cross-validation "
        "(none among the choices)",
        [no_feedback] + [(f"{field} at {w}", run(field_added(tools, field, w), tools, tasks))
                         for field, w in FIELD_SCORES], parts)
    cv_rows = [full, with_fb, steps_weighted, fields_added]
    hybrid = None
    if candidates:
        mixes = [(name, found) for name, found in candidates.items() if name != "embedding alone"]
        hybrid = chosen("ToolIndex + WordLlama, weight and fusion chosen by cross-validation",
                        mixes, parts)
        cv_rows.append(hybrid)
    cv_rows += other_rows
    out += [f"Chosen by cross-validation (a grid of {len(full_grid)} rankings; "
            "each fold measured with the options the other folds chose):", "",
            *TABLE_HEADER, *map(table_row, cv_rows), ""]
    out += ["What each part adds on the held-out folds (the cross-validation run again "
            "with the part held off):", "", *GAIN_HEADER,
            *(gain_row(row, full) for row in held_rows), ""]
    out.append("Chosen in each fold: " + "; ".join(
        f"fold {i + 1}: {name}" for i, name in enumerate(full.picks)))
    out.append(f"Chosen on all {len(tasks)} tasks (the defaults): "
               f"{pick(full_grid, tasks)[0]}")
    out.append("Feedback, chosen in each fold: " + "; ".join(with_fb.picks)
               + f"; on all tasks: {pick(feedback, tasks)[0]}")
    out.append("What feedback adds on the held-out folds, against the defaults: "
               + gain_text(with_fb, fixed("the defaults", no_feedback[1], parts)))
    base = fixed("the defaults", no_feedback[1], parts)
    for row in other_rows:
        out.append(f"{row.label.split(',')[0]}, chosen in each fold: " + "; ".join(row.picks))
        out.append(f"{row.label.split(',')[0]} against the defaults: {gain_text(row, base)}"
                   + ("" if hybrid is None else
                      f"; against ToolIndex + WordLlama: {gain_text(row, hybrid)}"))
    out.append("The steps' weight, chosen in each fold: " + "; ".join(steps_weighted.picks))
    out.append("A field on its own, chosen in each fold: " + "; ".join(
        "none" if name == no_feedback[0] else name for name in fields_added.picks))
    if hybrid is not None:
        out.append("The scorer, chosen in each fold: " + "; ".join(hybrid.picks)
                   + f"; on all tasks: {pick(mixes, tasks)[0]}")
    out.append("")
    more, more_targets = general_report(tools, tasks, parts, full, base, scorer, hybrid)
    out += [*more, ""]
    targets = [("lexical, the 72 rankings", full, LEXICAL_TARGETS), more_targets[0]]
    if hybrid is not None:
        targets.append(("with the offline scorer (WordLlama), the lexical defaults fixed",
                        hybrid, SEMANTIC_TARGETS))
    targets += more_targets[1:]
    out += target_rows(targets)
    if scorer is None and semantic:
        out += ["", "WordLlama is not installed, so the embedding scorer is not measured "
                "(`pip install .[semantic]` brings it)."]
    return out


# --- Relevance II: more methods, each measured on held-out folds ------------------------

#: A wider grid of the BM25 options and field weights (the rest at the defaults), chosen
#: per training fold (on the training tasks, or by an inner cross-validation there).
WIDE_GRID: dict[str, tuple[Any, ...]] = {
    "k1": (1.2, 0.8, 1.6, 2.0),
    "b": (0.9, 0.6, 0.75, 1.0),
    "name": (2.0, 1.0, 3.0),
    "description": (0.5, 1.0),
    "params": (0.0, 0.25),
}
#: How many servers' tools the "servers first" variant may put ahead.
SERVERS_FIRST = (1, 2, 3, 5)
#: The inner cross-validation's folds (over a training fold's tasks).
INNER_FOLDS = 5


def wide_rankings() -> list[Ranking]:
    """Every Ranking of :data:`WIDE_GRID`, the defaults first."""
    return list(dict.fromkeys(Ranking(**dict(zip(WIDE_GRID, values, strict=True)))
                              for values in itertools.product(*WIDE_GRID.values())))


#: A procedure: the training tasks -> the candidate it chooses (name, found).
Procedure = Callable[[Sequence[Task]], tuple[str, Found]]


def by_procedure(label: str, procedure: Procedure, parts: Sequence[Sequence[Task]]) -> Measured:
    """Each fold held out in turn: what ``procedure`` chooses on the other folds,
    measured on the held-out fold."""
    out = Measured(label, [])
    for i, fold in enumerate(parts):
        train = [t for j, other in enumerate(parts) if j != i for t in other]
        name, found = procedure(train)
        out.per_fold.append(fold_cells(found, fold))
        out.picks.append(name)
    return out


def inner_cv(procedures: dict[str, Procedure]) -> Procedure:
    """The procedure that, on its training tasks, runs each of ``procedures`` in an
    inner cross-validation (:data:`INNER_FOLDS` folds), keeps the one whose choices do
    best on the inner held-out folds (the first on a tie), and returns what that one
    chooses on all its training tasks: so that a larger grid is only used where it
    holds up on tasks it did not choose on."""
    def procedure(train: Sequence[Task]) -> tuple[str, Found]:
        inner = folds(train, INNER_FOLDS)
        best, value = next(iter(procedures)), -math.inf
        for name, run_it in procedures.items():
            held = []
            for i, part in enumerate(inner):
                rest = [t for j, other in enumerate(inner) if j != i for t in other]
                held.append(objective(run_it(rest)[1], part))
            if statistics.fmean(held) > value + 1e-12:
                best, value = name, statistics.fmean(held)
        name, found = procedures[best](train)
        return f"{best}: {name}", found
    return procedure


def picking(candidates: Sequence[tuple[str, Found]]) -> Procedure:
    """The procedure that picks the best of ``candidates`` on its tasks (:func:`pick`)."""
    return lambda train: pick(candidates, train)


class _TweakedDocuments(reference_relevance._Documents):
    """The reference's BM25F documents with one change from the IR literature:

    * ``"field b"``: a length normalisation of its own per field (``b`` of the
      name and of the description, as BM25F allows: Robertson, Zaragoza and
      Taylor 2004), the name being a few words long and the description tens;
    * ``"bm25+"``: a lower bound ``delta`` on a matched term's normalised count
      (BM25+, Lv and Zhai 2011), so that a long document's match never counts
      next to nothing;
    * ``"dirichlet"``: query likelihood with Dirichlet smoothing over the
      weighted fields (Zhai and Lafferty 2001), ``mu`` a multiple of the mean
      weighted length, a term's contribution ``log(1 + tf / (mu p(t))) +
      log(mu / (len + mu))`` clipped at 0 (as Lucene scores it).
    """

    def tweak(self, kind: str, value: Any) -> _TweakedDocuments:
        self.kind, self.value = kind, value
        if kind == "dirichlet":
            self.weighted = [sum(w * n for w, n in zip(self.weights, lengths, strict=True))
                             for lengths in self.lengths]
            self.cf: dict[str, float] = {}
            for counts in self.counts:
                for weight, field_counts in zip(self.weights, counts, strict=True):
                    for term, n in field_counts.items():
                        if weight > 0:
                            self.cf[term] = self.cf.get(term, 0.0) + weight * n
            whole = sum(self.weighted) or 1.0
            self.mu = value * whole / max(1, self.total)
            self.p = {term: n / whole for term, n in self.cf.items()}
        return self

    def contribution(self, doc: int, term: str) -> float:
        if self.kind == "dirichlet":
            tf = sum(w * c.get(term, 0) for w, c in zip(self.weights, self.counts[doc],
                                                         strict=True))
            if tf <= 0:
                return 0.0
            return max(0.0, math.log(1 + tf / (self.mu * self.p[term]))
                       + math.log(self.mu / (self.weighted[doc] + self.mu)))
        count = self.df.get(term, 0)
        if count == 0:
            return 0.0
        x = 0.0
        for f, weight in enumerate(self.weights):
            tf = self.counts[doc][f].get(term, 0)
            if weight > 0 and tf > 0:
                b = self.value.get(f, self.b) if self.kind == "field b" else self.b
                x += weight * tf / (1.0 - b + b * self.lengths[doc][f] / self.averages[f])
        if x <= 0:
            return 0.0
        extra = self.value / (self.k1 + 1) if self.kind == "bm25+" else 0.0
        return math.log(1.0 + (self.total - count + 0.5) / (count + 0.5)) * (
            x / (self.k1 + x) + extra)


def tweaked_index(tools: Sequence[dict[str, Any]], kind: str, value: Any) -> Any:
    """The reference's index (the package's scores, in Python) with its tools' and
    servers' documents changed by :class:`_TweakedDocuments`."""
    from toolfilter_fast.relevance.options import tool_text

    index = reference_relevance.SearchIndex([tool_text(tool) for tool in tools])
    for attr in ("tools", "servers"):
        docs = getattr(index, attr)
        tweaked = _TweakedDocuments.__new__(_TweakedDocuments)
        tweaked.__dict__.update(docs.__dict__)
        setattr(index, attr, tweaked.tweak(kind, value))
    return index


_NAME, _DESCRIPTION = 0, 2
#: The changes from the literature the cross-validation chooses among (with the defaults).
TWEAKS: dict[str, tuple[tuple[str, Any], ...]] = {
    "field b": tuple((f"b name {n}, description {d}", {_NAME: n, _DESCRIPTION: d})
                     for n in (0.3, 0.6, 0.9) for d in (0.6, 0.75, 0.9, 1.0)
                     if (n, d) != (0.9, 0.9)),
    "bm25+": tuple((f"delta {d}", d) for d in (0.25, 0.5, 1.0)),
    "dirichlet": tuple((f"mu {m} x mean length", m) for m in (0.5, 1.0, 2.0, 4.0)),
}
TWEAK_LABELS = {
    "field b": "a length normalisation per field (b of the name, of the description)",
    "bm25+": "BM25+ (a lower bound delta on a matched term)",
    "dirichlet": "query likelihood, Dirichlet smoothing (in place of BM25)",
}


def semantic_variants(tools: Sequence[dict[str, Any]], tasks: Sequence[Task], scorer: Any,
                      index: ToolIndex) -> dict[str, Scores]:
    """The embedding scorer's scores, per question, in four forms: the whole
    question's cosine (``"whole"``); each step embedded too, the whole's and each
    step's scaled to 0..1 and added up, as the lexical steps are (``"steps"``); a
    tool's cosine plus ``0.5`` or ``1`` times its server's, the server's embedding
    the mean of its tools' (``"server 0.5"``, ``"server 1"``); and both."""
    matrix = scorer.embed_tools(tools)
    import numpy as np

    server_of = [str(tool.get("server_id")) for tool in tools]
    members: dict[str, list[int]] = {}
    for i, server in enumerate(server_of):
        members.setdefault(server, []).append(i)
    # cos(mean of unit rows, q) = mean of the rows' cosines / |mean of the rows|.
    norms = {s: float(np.linalg.norm(matrix[idx].mean(axis=0))) or 1.0
             for s, idx in members.items()}

    def with_servers(cos: list[float], weight: float) -> list[float]:
        server = {s: statistics.fmean(cos[i] for i in idx) / norms[s]
                  for s, idx in members.items()}
        return [c + weight * server[server_of[i]] for i, c in enumerate(cos)]

    def scaled(values: list[float]) -> list[float]:
        low, high = min(values, default=0.0), max(values, default=0.0)
        return [(v - low) / (high - low) if high > low else 0.0 for v in values]

    def steps_of(cosines: list[list[float]],
                 transform: Callable[[list[float]], list[float]]) -> list[float]:
        if len(cosines) == 1:
            return transform(cosines[0])
        parts = [scaled(transform(c)) for c in cosines]
        return [sum(column) for column in zip(*parts, strict=True)]

    out: dict[str, Scores] = {name: {} for name in (
        "whole", "steps", "server 0.5", "server 1", "steps, server 0.5")}
    for task in tasks:
        q = task["question"]
        each = [step for step in _core.search_steps(q) if index.has_terms(step)]
        cosines = [list(scorer(text, tools)) for text in ([q, *each] if len(each) > 1 else [q])]
        out["whole"][q] = cosines[0]
        out["steps"][q] = steps_of(cosines, lambda c: c)
        out["server 0.5"][q] = with_servers(cosines[0], 0.5)
        out["server 1"][q] = with_servers(cosines[0], 1.0)
        out["steps, server 0.5"][q] = steps_of(cosines, lambda c: with_servers(c, 0.5))
    return out


def general_report(tools: Sequence[dict[str, Any]], tasks: Sequence[Task],
                   parts: Sequence[Sequence[Task]], full: Measured, base: Measured,
                   scorer: Any | None, hybrid: Measured | None
                   ) -> tuple[list[str], list[tuple[str, Measured, dict[int, float]]]]:
    """More methods, each chosen on the training folds and measured on the held-out
    fold against what it would replace: on the lexical side servers first (how
    many chosen per fold), a wider grid of k1, b and field weights (chosen on the training fold, or the grid's size chosen by an
    inner cross-validation there), a length normalisation per field, BM25+ and
    query likelihood; on the embedding side each step embedded, server
    embeddings, a z-score mix, and the lexical options and the fusion chosen
    together in each training fold (nested). The lines, and the rows for the
    targets table."""
    rows: list[tuple[Measured, Measured, str]] = []
    notes: list[str] = []
    # (d) BM25 k1, b and the field weights per training fold.
    lexical_by_ranking: dict[Ranking, Scores] = {}

    def lexical(ranking: Ranking) -> Scores:
        if ranking not in lexical_by_ranking:
            lexical_by_ranking[ranking] = question_scores(ToolIndex(tools, ranking), tasks)
        return lexical_by_ranking[ranking]
    wide = [(describe(r), by_scores(lexical(r), tools, tasks, True)) for r in wide_rankings()]
    narrow = [(describe(r), by_scores(lexical(r), tools, tasks, True)) for r in grid_rankings()]
    defaults_found = wide[0][1]
    rows.append((by_procedure(f"k1, b and field weights ({len(wide)} rankings) chosen on "
                              "each training fold", picking(wide), parts), full,
                 "the 72 rankings' choice"))
    # The package's defaults are no candidate here: they were chosen on all the tasks.
    procedures: dict[str, Procedure] = {
        f"the {len(narrow)} rankings": picking(narrow),
        f"the {len(wide)} rankings": picking(wide),
    }
    lexical_cv = by_procedure(f"the grid itself ({len(narrow)} or {len(wide)} rankings) chosen "
                              f"by an inner {INNER_FOLDS}-fold cross-validation in each "
                              "training fold", inner_cv(procedures), parts)
    rows.append((lexical_cv, full, "the 72 rankings' choice"))
    notes.append(f"The grid itself, chosen on all the tasks: {inner_cv(procedures)(tasks)[0]}")
    targets: list[tuple[str, Measured, dict[int, float]]] = [
        ("lexical, the grid chosen by an inner cross-validation", lexical_cv, LEXICAL_TARGETS)]
    # Servers first, how many chosen per fold (or none).
    firsts = [("the defaults", defaults_found)] + [
        (f"the best {n} servers first", run(servers_first(tools, Ranking(), n), tools, tasks))
        for n in SERVERS_FIRST]
    rows.append((by_procedure("servers first, how many servers chosen per fold (or none)",
                              picking(firsts), parts), base, "the defaults"))
    rows.append((by_procedure("servers first, how many servers chosen per fold (never none)",
                              picking(firsts[1:]), parts), base, "the defaults"))
    # (e) changes from the IR literature, through the reference.
    for kind, choices in TWEAKS.items():
        candidates = [("the defaults", defaults_found)] + [
            (name, by_scores(question_scores(tweaked_index(tools, kind, value), tasks), tools,
                             tasks, True)) for name, value in choices]
        rows.append((by_procedure(f"{TWEAK_LABELS[kind]}, chosen per fold (or none)",
                                  picking(candidates), parts), base, "the defaults"))
        if kind == "dirichlet":
            rows.append((by_procedure(f"{TWEAK_LABELS[kind]}, mu chosen per fold (never none)",
                                      picking(candidates[1:]), parts), base, "the defaults"))
    if scorer is not None and hybrid is not None:
        defaults = ToolIndex(tools)
        variants = semantic_variants(tools, tasks, scorer, defaults)
        lex = lexical(Ranking())
        # (b), (c): each form of the embedding scores, fusion chosen per fold.
        forms = {name: fusion_candidates(tools, tasks, lex, scores, prefix=f"{name}: ")
                 for name, scores in variants.items()}
        for name in ("steps", "server 0.5", "server 1", "steps, server 0.5"):
            rows.append((by_procedure(f"WordLlama, {name}: fusion chosen per fold",
                                      picking(forms[name]), parts), hybrid,
                         "WordLlama, whole question"))
        every = [c for found in forms.values() for c in found]
        rows.append((by_procedure("WordLlama: its form and fusion chosen per fold",
                                  picking(every), parts), hybrid, "WordLlama, whole question"))
        notes.append("WordLlama's form and fusion, chosen on all the tasks: "
                     f"{pick(every, tasks)[0]}")
        # (e) a mix calibrated by z-scores, beside the min-max mix and RRF.
        zs = fusion_candidates(tools, tasks, lex, variants["whole"], ("mix", "rrf", "z"))
        rows.append((by_procedure("WordLlama: fusion among mix, RRF and z-score mix chosen "
                                  "per fold", picking(zs), parts), hybrid,
                     "WordLlama, whole question"))
        # (a) nested: the lexical options, then the fusion, both on the training fold.
        mixes = {r: fusion_candidates(tools, tasks, lexical(r), variants["whole"])
                 for r in grid_rankings()}

        def nested(train: Sequence[Task]) -> tuple[str, Found]:
            name, _found = pick(narrow, train)
            ranking = next(r for r in grid_rankings() if describe(r) == name)
            fusion, found = pick(mixes[ranking], train)
            return f"{name} / {fusion}", found
        nested_row = by_procedure("WordLlama, nested: the ranking's options and then the "
                                  "fusion chosen on each training fold", nested, parts)
        rows.append((nested_row, hybrid, "WordLlama, whole question"))
        targets.append(("with the offline scorer (WordLlama), nested", nested_row,
                        SEMANTIC_TARGETS))
    out = ["Relevance II: each method chosen on the training folds alone and measured on "
           "the held-out fold, against what it would replace:", "", *TABLE_HEADER,
           *(table_row(row) for row, _, _ in rows), "",
           "| method | against | pooled R@10 (folds up, down) | pooled R@20 (folds up, down) |",
           "| --- | --- | --- | --- |"]
    for row, against, what in rows:
        at10, at20 = gain_cells(against, row)
        out.append(f"| {row.label} | {what} | {at10} | {at20} |")
    out.append("")
    for row, _, _ in rows:
        out.append(f"{row.label}, chosen in each fold: " + "; ".join(row.picks))
    return out + notes, targets


def _default_scorer_weight() -> float:
    from toolfilter_fast.relevance import Relevance

    return Relevance().scorer_weight


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
             build_base, "under 1 s", lambda mine, _ratio: mine < 1.0),
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


_LOAD = """
import json, os, time
def rss():
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
before = rss()
started = time.perf_counter()
MAKE
print(json.dumps([time.perf_counter() - started, rss() - before]))
"""
_WORDLLAMA = "from toolfilter_fast.relevance.semantic import wordllama_scorer; wordllama_scorer()"


def _load_cost(make: str = _WORDLLAMA) -> tuple[float, int] | None:
    """Loading a scorer (by the code ``make``: WordLlama unless given) in a fresh
    process: seconds, and the memory it adds (None where /proc is not there)."""
    import subprocess

    try:
        out = subprocess.run([sys.executable, "-c", _LOAD.replace("MAKE", make)],
                             capture_output=True, text=True, check=True, timeout=300)
    except (OSError, subprocess.SubprocessError):
        return None
    seconds, memory = json.loads(out.stdout.strip().splitlines()[-1])
    return float(seconds), int(memory)


def semantic_cost_rows(count: int, queries: int, spec: str | None = None) -> list[str]:
    """What the offline embedding scorer costs: loading it (in a fresh
    process), embedding ``count`` synthetic tools and the memory the
    embeddings take, a query over them (the median of ``queries``); the
    lexical index's build and query beside it."""
    import tracemalloc

    if spec is None:
        label, scorer, load = "WordLlama", offline_scorer(), _load_cost()
        if scorer is None:
            return ["WordLlama is not installed, so the embedding scorer's cost is not measured "
                    "(`pip install .[semantic]` brings it)."]
    else:
        label, scorer = local_scorer(spec)
        load = _load_cost(f"import sys; sys.path.insert(0, {str(HERE)!r}); "
                          f"from relevance import local_scorer; local_scorer({spec!r})")
    tools = synthetic_catalog(count)
    asked = synthetic_queries(tools, queries)
    tracemalloc.start()
    embed = _seconds(lambda: scorer.embed_tools(tools))
    embeddings = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    index_build = _seconds(lambda: ToolIndex(tools))
    index = ToolIndex(tools)
    lexical = statistics.median(_seconds(functools.partial(index.rank, q, 20)) for q in asked)
    hybrid = statistics.median(
        _seconds(functools.partial(index.rank, q, 20, scorer=scorer)) for q in asked)
    mb = 1 << 20
    loaded = ("| load the model (a fresh process) | not measured here | |" if load is None else
              f"| load the model (a fresh process) | {load[0] * 1e3:.0f} ms "
              f"| {load[1] / mb:.0f} MB |")
    return [
        f"| {label} on {count:,} synthetic tools | time | memory |", "| --- | ---: | ---: |",
        loaded,
        f"| embed the catalog (once) | {embed * 1e3:.0f} ms | {embeddings / mb:.1f} MB |",
        f"| the lexical index's build, beside it | {index_build * 1e3:.0f} ms | |",
        f"| one query, lexical (median of {queries}) | {lexical * 1e3:.2f} ms | |",
        f"| one query, lexical + {label} (median of {queries}) | {hybrid * 1e3:.2f} ms | |",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=pathlib.Path, default=DEFAULT_DATA,
                        help="a folder with catalog.json and tasks.json (or tasks*.json)")
    parser.add_argument("--folds", type=int, default=FOLDS)
    parser.add_argument("--tools", type=int, default=100_000)
    parser.add_argument("--semantic-tools", type=int, default=10_000)
    parser.add_argument("--scorer-tools", type=int, default=200,
                        help="how many synthetic tools each --scorer's cost is timed on")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--skip-semantic", action="store_true")
    parser.add_argument("--scorer", action="append", default=[], metavar="KIND:FOLDER",
                        help="another local embedding model to measure the same way: "
                        "model2vec:FOLDER or fastembed:FOLDER:DIM (repeatable)")
    args = parser.parse_args(argv)
    given = list(sys.argv[1:] if argv is None else argv)
    print(f"Command: `{' '.join(['python benches/relevance.py', *given])}`\n")
    print(f"Machine: {machine()}\n")
    dataset = load_dataset(args.data)
    if dataset is None:
        print(f"No dataset in LiveMCPBench's format (catalog.json, tasks.json) at {args.data}: "
              "the recall tables are skipped.")
    else:
        tools, tasks = dataset
        servers = len({tool["server_id"] for tool in tools})
        print(f"Recall on {len(tasks)} tasks over {len(tools)} tools of {servers} servers\n")
        others = [local_scorer(spec) for spec in args.scorer]
        print("\n".join(quality_report(tools, tasks, args.folds, not args.skip_semantic,
                                        others)))
    if not args.skip_timing:
        print()
        print("\n".join(speed_rows(args.tools, args.rounds, args.queries)))
        if not args.skip_semantic:
            print()
            print("\n".join(semantic_cost_rows(args.semantic_tools, min(args.queries, 50))))
        for spec in args.scorer:
            print()
            print("\n".join(semantic_cost_rows(args.scorer_tools, min(args.queries, 20), spec)))
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"\nLoad average {load[0]:.2f} (1 min) and {load[2]:.2f} (15 min) at the end.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
