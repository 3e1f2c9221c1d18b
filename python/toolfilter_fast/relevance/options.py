"""What the fast ranking and its reference share: the options, how a tool's
text is read, and how a user's scorer is mixed in.

The tokenizer, the index and the scores are written out separately, in the
Rust core (``rust/relevance/``) and in ``reference.relevance``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

__all__ = [
    "FIELDS",
    "SCORER_WEIGHT",
    "Ranking",
    "Scorer",
    "check_limit",
    "check_scorer",
    "mix_scores",
    "tool_text",
]

#: The fields of a tool the index reads, in the order they are scored.
FIELDS = ("name", "title", "description", "server", "params")

#: The scorer's share of a mixed score when none is given: chosen by cross-validation
#: (``benches/relevance.py``) with the offline embedding scorer mixed into the lexical one.
SCORER_WEIGHT = 0.2

#: ``scorer(query, tools) -> scores``: one finite float per tool, higher is better.
Scorer = Callable[[str, Sequence[Any]], Sequence[float]]


def _number(value: Any, what: str, *, low: float = 0.0, high: float = math.inf,
            open_low: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number, not {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or number < low or number > high or (open_low and number == low):
        bound = f"> {low:g}" if open_low else f">= {low:g}"
        if high != math.inf:
            bound += f" and <= {high:g}"
        raise ValueError(f"{what} must be a finite number {bound}, not {value!r}")
    return number


@dataclass(frozen=True)
class Ranking:
    """How the lexical score weighs a tool's text (BM25F with server evidence).

    * ``name``, ``title``, ``description``, ``server``, ``params``: the weight
      of each field (``params`` is the input schema's property names and
      descriptions); 0 leaves a field out;
    * ``k1`` (term-frequency saturation) and ``b`` (length normalisation), as
      in BM25;
    * ``server_k1``: the saturation of a server's document. A server is as
      long as all its tools, and at a tool's ``k1`` any word its tools hold
      anywhere would count nearly in full; a larger one lets a server's score
      grow with how much of it is about the word;
    * ``server_evidence``: how much a tool gains from its server's score, the
      server scored as one document made of all its tools (a task often needs
      several tools of one server); 0 turns it off;
    * ``synonyms``: the weight of a synonym of a query term from the built-in
      English lexicon, relative to the term itself (per term, a tool counts
      the best of the two); from 0 (the lexicon off) to 1;
    * ``path_words``: whether a query that mentions a file path (``/``,
      ``~/``, ``./``, ``../`` or ``X:\\`` where a word may start, followed by a
      name) also asks for the words "file" and "path": a task that names a
      path deals in files, and file tools say "file" and "path", not the
      path's own words;
    * ``steps``: whether a task of several steps (cut at sentence ends and at
      the words "and" and "then", see :func:`~toolfilter_fast.reference.relevance.steps`)
      is also ranked step by step: a tool's score is then its score for the
      whole query plus its score for each step, so that each step's tools
      rise, not only those of the step with the rarest words.
    """

    name: float = 2.0
    title: float = 1.0
    description: float = 0.5
    server: float = 1.0
    params: float = 0.0
    k1: float = 1.2
    server_k1: float = 3.0
    b: float = 0.9
    server_evidence: float = 1.0
    synonyms: float = 0.7
    path_words: bool = True
    steps: bool = True

    def __post_init__(self) -> None:
        for field in FIELDS:
            object.__setattr__(self, field, _number(getattr(self, field), f"weights.{field}"))
        object.__setattr__(self, "k1", _number(self.k1, "k1", open_low=True))
        object.__setattr__(self, "server_k1", _number(self.server_k1, "server_k1", open_low=True))
        object.__setattr__(self, "b", _number(self.b, "b", high=1.0))
        object.__setattr__(self, "server_evidence",
                           _number(self.server_evidence, "server_evidence"))
        object.__setattr__(self, "synonyms", _number(self.synonyms, "synonyms", high=1.0))
        for flag in ("path_words", "steps"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be a bool, not {type(getattr(self, flag)).__name__}")

    @property
    def weights(self) -> tuple[float, float, float, float, float]:
        """The field weights in :data:`FIELDS` order."""
        return (self.name, self.title, self.description, self.server, self.params)

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> Ranking:
        """From ``{"weights": {...}, "k1": ..., "server_k1": ..., "b": ...,
        "server_evidence": ..., "synonyms": ..., "path_words": ..., "steps": ...}``;
        ValueError naming an unknown key."""
        known = {"weights", "k1", "server_k1", "b", "server_evidence", "synonyms", "path_words",
                 "steps"}
        extra = sorted(set(options) - known)
        if extra:
            raise ValueError(f"unknown ranking option {extra[0]!r} (the options are "
                             f"{', '.join(map(repr, sorted(known)))})")
        weights = options.get("weights", {})
        if not isinstance(weights, Mapping):
            raise TypeError(f"weights must be a mapping, not {type(weights).__name__}")
        unknown = sorted(set(weights) - set(FIELDS))
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r} in weights (the fields are "
                             f"{', '.join(map(repr, FIELDS))})")
        rest = {key: options[key] for key in sorted(known - {"weights"}) if key in options}
        return cls(**weights, **rest)

    def to_dict(self) -> dict[str, Any]:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {"weights": {field: values.pop(field) for field in FIELDS}, **values}


def params_text(schema: Any) -> str | None:
    """The input schema's top-level property names and their descriptions,
    one space between each; None without any."""
    if not isinstance(schema, Mapping):
        return None
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return None
    parts: list[str] = []
    for key, spec in properties.items():
        if isinstance(key, str):
            parts.append(key)
        if isinstance(spec, Mapping):
            description = spec.get("description")
            if isinstance(description, str):
                parts.append(description)
    return " ".join(parts) if parts else None


def tool_text(tool: Any) -> tuple[str | None, ...]:
    """A tool's text in :data:`FIELDS` order, each a ``str`` or None: a mapping
    read by key (``name``, ``title``, ``description``, ``server_id``, and
    ``inputSchema`` or else ``input_schema``), any other object by attribute
    alike. A value that is not a ``str`` counts as missing."""
    if type(tool) is dict or isinstance(tool, Mapping):
        get = tool.get
        name, title, description = get("name"), get("title"), get("description")
        server, schema = get("server_id"), get("inputSchema")
        if schema is None:
            schema = get("input_schema")
    else:
        name, title = getattr(tool, "name", None), getattr(tool, "title", None)
        description = getattr(tool, "description", None)
        server, schema = getattr(tool, "server_id", None), getattr(tool, "inputSchema", None)
        if schema is None:
            schema = getattr(tool, "input_schema", None)
    return (
        name if isinstance(name, str) else None,
        title if isinstance(title, str) else None,
        description if isinstance(description, str) else None,
        server if isinstance(server, str) else None,
        None if schema is None else params_text(schema),
    )


def check_limit(value: Any, what: str) -> int:
    """An int >= 0 (not a bool), or the TypeError/ValueError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int >= 0, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{what} must be an int >= 0, got {value!r}")
    return value


def check_scorer(scorer: Any, weight: Any) -> tuple[Scorer | None, float]:
    """The scorer (None or a callable) and its weight (from 0 to 1)."""
    if scorer is not None and not callable(scorer):
        raise TypeError(f"scorer must be callable or None, not {type(scorer).__name__}")
    return scorer, _number(weight, "scorer_weight", high=1.0)


def _user_scores(scorer: Scorer, query: str, tools: Sequence[Any]) -> list[float]:
    returned = scorer(query, tools)
    # A NumPy array of floats (an embedding scorer's) becomes Python floats at once.
    tolist = getattr(returned, "tolist", None)
    kind = getattr(getattr(returned, "dtype", None), "kind", None)
    scores = tolist() if callable(tolist) and kind == "f" else list(returned)
    if not isinstance(scores, list):
        raise TypeError(f"the scorer's scores must be a sequence, not {type(returned).__name__}")
    if len(scores) != len(tools):
        raise ValueError(f"the scorer returned {len(scores)} scores for {len(tools)} tools")
    if all(type(score) is float for score in scores) and all(map(math.isfinite, scores)):
        return scores
    out = []
    for index, score in enumerate(scores):
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise TypeError(f"the scorer's score {index} must be a number, not "
                            f"{type(score).__name__}")
        number = float(score)
        if not math.isfinite(number):
            raise ValueError(f"the scorer's score {index} is not finite: {score!r}")
        out.append(number)
    return out


def mix_scores(lexical: Sequence[float], scorer: Scorer | None, weight: float, query: str,
               tools: Sequence[Any]) -> list[float]:
    """The lexical scores, or with a scorer ``(1 - weight) * lexical / max +
    weight * (user - min) / (max - min)``: each side scaled to 0..1 over these
    tools (a side whose scores are all equal counts 0), so that ``weight`` 1
    ranks by the scorer alone and 0 by the lexical score alone."""
    if scorer is None:
        return list(lexical)
    user = _user_scores(scorer, query, tools)
    top = max(lexical, default=0.0)
    low, high = min(user, default=0.0), max(user, default=0.0)
    span = high - low
    mixed = []
    for own, theirs in zip(lexical, user, strict=True):
        left = own / top if top > 0 else 0.0
        right = (theirs - low) / span if span > 0 else 0.0
        mixed.append((1.0 - weight) * left + weight * right)
    return mixed


@dataclass(frozen=True)
class Relevance:
    """The Policy's relevance stage: keep the ``top_k`` visible tools that
    best fit the turn's message (see ``docs/policy.md``).

    ``ranking`` weighs the lexical score; ``scorer`` (optional) is a
    ``(query, tools) -> scores`` callable, mixed in with ``scorer_weight``
    (:data:`SCORER_WEIGHT` by default; 1: its scores alone; see :func:`mix_scores`).
    """

    top_k: int = 20
    ranking: Ranking = Ranking()
    scorer: Scorer | None = None
    scorer_weight: float = SCORER_WEIGHT

    def __post_init__(self) -> None:
        check_limit(self.top_k, "relevance top_k")
        if not isinstance(self.ranking, Ranking):
            raise TypeError(f"ranking must be a Ranking, not {type(self.ranking).__name__}")
        _, weight = check_scorer(self.scorer, self.scorer_weight)
        object.__setattr__(self, "scorer_weight", weight)

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any]) -> Relevance:
        """From ``{"top_k": 20, "weights": {...}, "k1": ..., "server_k1": ..., "b": ...,
        "server_evidence": ..., "synonyms": ..., "path_words": ..., "steps": ..., "scorer": fn,
        "scorer_weight": ...}``."""
        own = {"top_k", "scorer", "scorer_weight"}
        ranking = Ranking.from_mapping({k: v for k, v in options.items() if k not in own})
        return cls(**{k: options[k] for k in own if k in options}, ranking=ranking)
