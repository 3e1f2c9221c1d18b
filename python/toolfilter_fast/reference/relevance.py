"""The ranked tool search spelled out in plain Python: the oracle of the
property tests and the speed baseline of ``benches/relevance.py``.

The same tokens and the same scores as the Rust core (``rust/relevance/``),
computed the obvious way: a loop over the tools for each query. Floats are
added in the same order as the core adds them (query terms in query order,
fields in :data:`FIELDS` order), so the two agree exactly, and ties go to the
earlier tool. English stems come from ``snowballstemmer`` (the Snowball
project's own Python port, the version whose rules the core's
``rust-stemmers`` follows), imported when the first word is stemmed.

Tokens, as the core makes them:

* ASCII letters and digits and every character outside the ranges below are
  word characters; ASCII punctuation, spaces and controls, Latin-1
  punctuation, the symbol and punctuation blocks, surrogates, private use and
  emoji separate words;
* scripts written without spaces (Han, kana, Hangul, Thai, Lao, Myanmar,
  Khmer) become overlapping character pairs (a lone character stays single);
* in the name, server and parameter fields, a word is also split where an
  ASCII lower-case letter or digit meets an upper-case one
  (``getBaziDetail``) and before the last capital of a run followed by a
  lower-case letter (``HTMLParser``);
* each piece is lower-cased per character (``fold_lower``); a piece of one
  ASCII character and the English stop words are dropped; pieces of ASCII
  letters only, 3 to 40 of them, are stemmed.

Synonyms: each line of :data:`SYNONYMS` (and of :data:`FORMATS`, a file
extension and its media type's words) is a group of words that stand for one
another; a query term's synonyms are the other terms of its groups that are not
terms of the query. Per query term, a document counts the larger of the term's
own contribution and ``synonyms`` times each synonym's.

Steps: a query of two or more :func:`steps` that have a term is scored as the
sum of its scores as a whole and for each step (``Ranking.steps``).

Scores: BM25F per document, the tools saturating at ``k1`` and the servers
(each all its tools' text, its own id's terms once) at ``server_k1``.
"""

from __future__ import annotations

import functools
import math
import string
from collections.abc import Iterable, Sequence
from typing import Any

from ..relevance.base import Engine, ToolIndexBase
from ..relevance.options import FIELDS, Ranking, tool_text
from .text import fold_lower, text_of

__all__ = ["FORMATS", "PATH_WORDS", "STOPWORDS", "SYNONYMS", "SearchIndex", "ToolIndex",
           "mentions_path", "steps", "synonyms_of", "tokens"]

#: English function words and the fillers of a request ("please help me ...").
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be been before
being below between both but by can could did do does doing done down during each
either else etc ever every few for from further had has have having he her here hers
herself him himself his how however i if in into is it its itself just let lets like
may me might mine more most much must my myself no nor not now of off on once one
only or other our ours ourselves out over own please same shall she should so some
such than that the their theirs them themselves then there these they this those
through thus to too under until up upon us very via was we were what whatever when
where whether which while who whom whose why will with within without would yes yet
you your yours yourself yourselves help want wants need needs
""".split())

#: Groups of English words that name the same action or thing, one group a line;
#: in each, every two words are related in WordNet (a shared synset, a direct
#: hypernym or hyponym, a derived form, a similar adjective, a pertainym or an attribute).
SYNONYMS = tuple(line.strip() for line in """
save write record
find locate
find discover
search lookup
search seek
get fetch retrieve
get obtain
retrieve access
remove delete
remove clear
delete erase
show display
create make generate
create make build
make add
edit modify change alter
modify update
date day
date month
time day
today day
tomorrow day
yesterday day
picture image
picture photo photograph pic
site website
convert conversion
summary summarize summarise abstract
summary overview
chat conversation
weather precipitation
rain precipitation
news story
place address
movie film
film cinema
music sound
music tune melody
song sound
audio sound
calculate compute
chart graph plot
graph plot diagram
buy purchase
run execute
open launch
trip travel
hotel hostel inn
lodging hostel
popular hot
paper article
stock share
stock securities
price cost
currency money
invest investor
corporation firm
business enterprise
business firm
earnings income profit
note memo
plan schedule agenda
appointment meeting
route direction
direction navigation
vicinity proximity
restaurant cafe eatery
cooking cuisine
train rail
rail railway
booking reservation
car automobile
school education
book novel
art artwork
art sculpture
draw drawing sketch
academic scholarly
medical medicine
gene genetic
country nation
stop terminate
terminate kill
start begin
copy duplicate
copy clone
compare comparison
merge combine
split divide
recommend suggest
analyze analysis
analyze analyse
history historical
think thought
thought reasoning
problem puzzle
contest competition tournament
contest competition match
""".strip().splitlines())

#: File formats: an extension, then the words of its registered media type.
FORMATS = tuple(line.strip() for line in """
docx document
xls excel
xlsx sheet
ppt powerpoint
pptx presentation
md markdown
txt plain
htm html
png image
jpg image
jpeg image
gif image
svg image
webp image
bmp image
mp3 audio
wav audio
mp4 video
mov video
avi video
""".strip().splitlines())

_NAME, _TITLE, _DESCRIPTION, _SERVER, _PARAMS = range(len(FIELDS))
#: The fields whose words are also split at camelCase.
_CAMEL = frozenset((_NAME, _SERVER, _PARAMS))

_WORD, _PAIRED, _SEPARATOR = range(3)

_PAIRED_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3FFFF),  # CJK extensions B and later
)

_SEPARATOR_RANGES = (
    (0x0080, 0x00BF),  # Latin-1 controls, punctuation and signs
    (0x00D7, 0x00D7),  # multiplication sign
    (0x00F7, 0x00F7),  # division sign
    (0x2000, 0x2BFF),  # punctuation, symbols, arrows, operators, shapes
    (0x2E00, 0x2E7F),  # supplemental punctuation
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0xD800, 0xDFFF),  # surrogates
    (0xE000, 0xF8FF),  # private use
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFE10, 0xFE1F),  # vertical forms
    (0xFE30, 0xFE6F),  # CJK compatibility forms, small forms
    (0xFF00, 0xFF0F),  # fullwidth punctuation
    (0xFF1A, 0xFF20),
    (0xFF3B, 0xFF40),
    (0xFF5B, 0xFF65),
    (0xFFF0, 0xFFFF),  # specials
    (0x1F000, 0x1FAFF),  # emoji and pictographs
)

#: A word longer than this is not stemmed (nor is anything but ASCII letters).
_STEM_MAX = 40


def _in(ranges: tuple[tuple[int, int], ...], code: int) -> bool:
    return any(low <= code <= high for low, high in ranges)


def _kind(c: str) -> int:
    code = ord(c)
    if code < 0x80:
        return _WORD if c.isascii() and c.isalnum() else _SEPARATOR
    if _in(_PAIRED_RANGES, code):
        return _PAIRED
    if _in(_SEPARATOR_RANGES, code):
        return _SEPARATOR
    return _WORD


def _is_lower(c: str) -> bool:
    return "a" <= c <= "z"


def _is_upper(c: str) -> bool:
    return "A" <= c <= "Z"


def _camel_pieces(word: str) -> list[str]:
    """``word`` cut before an ASCII capital that follows a lower-case letter or
    a digit, and before the last capital of a run that a lower-case letter
    follows."""
    pieces, start = [], 0
    for i in range(1, len(word)):
        before, here = word[i - 1], word[i]
        after = word[i + 1] if i + 1 < len(word) else ""
        cut = _is_upper(here) and (
            _is_lower(before) or (before.isdigit() and before.isascii())
            or (_is_upper(before) and _is_lower(after))
        )
        if cut:
            pieces.append(word[start:i])
            start = i
    pieces.append(word[start:])
    return pieces


_stemmer: Any = None


def _stem(word: str) -> str:
    global _stemmer
    if _stemmer is None:
        try:
            import snowballstemmer  # type: ignore[import-untyped,unused-ignore]
        except ImportError as err:  # pragma: no cover - the test extra installs it
            raise ImportError("the reference stems English words with snowballstemmer: "
                              "pip install 'toolfilter_fast[reference]'") from err
        _stemmer = snowballstemmer.stemmer("english")
    return str(_stemmer.stemWord(word))


@functools.lru_cache(maxsize=65536)
def _term(piece: str) -> str | None:
    """A folded piece as an index term: None for a stop word or one ASCII character."""
    folded = fold_lower(piece)
    if len(folded) == 1 and folded.isascii():
        return None
    if folded in STOPWORDS:
        return None
    if 3 <= len(folded) <= _STEM_MAX and all(_is_lower(c) for c in folded):
        return _stem(folded)
    return folded


def tokens(text: str, camel: bool = False) -> list[str]:
    """The index terms of ``text``, in order (see the module's rules)."""
    text = text_of(text)
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        kind = _kind(text[i])
        j = i
        while j < n and _kind(text[j]) == kind:
            j += 1
        run = text[i:j]
        if kind == _WORD:
            for piece in (_camel_pieces(run) if camel else [run]):
                term = _term(piece)
                if term is not None:
                    out.append(term)
        elif kind == _PAIRED:
            if len(run) == 1:
                out.append(fold_lower(run))
            else:
                out.extend(fold_lower(run[k:k + 2]) for k in range(len(run) - 1))
        i = j
    return out


@functools.lru_cache(maxsize=1)
def _lexicon() -> dict[str, frozenset[str]]:
    of: dict[str, set[str]] = {}
    for line in SYNONYMS + FORMATS:
        group = set(tokens(line))
        for term in group:
            of.setdefault(term, set()).update(group - {term})
    return {term: frozenset(others) for term, others in of.items()}


def synonyms_of(term: str) -> frozenset[str]:
    """The terms of the lexicon that stand for ``term`` (a term, as :func:`tokens` gives)."""
    return _lexicon().get(term, frozenset())


#: The words a query that mentions a file path also asks for.
PATH_WORDS = ("file", "path")
_SPACE = " \t\n\x0b\x0c\r"
#: What a path may follow, and what may not come right after its start.
_BEFORE_PATH = _SPACE + "\"'`([{<"
_NOT_A_NAME = "/\\" + _SPACE


def mentions_path(text: str) -> bool:
    """Whether ``text`` holds a file path: at its start or after white space
    (space, tab, line feed, vertical tab, form feed, carriage return) or an
    opening quote or bracket, ``/``, ``~/``, ``./``, ``../`` or a drive's
    ``X:\\`` (X an ASCII letter), and then a character that is not ``/``,
    ``\\`` or white space."""
    text = text_of(text)
    for i in range(len(text)):
        if i > 0 and text[i - 1] not in _BEFORE_PATH:
            continue
        rest = text[i:i + 4]
        if rest.startswith("../"):
            prefix = 3
        elif rest.startswith(("~/", "./")):
            prefix = 2
        elif rest.startswith("/"):
            prefix = 1
        elif len(rest) >= 3 and rest[0] in string.ascii_letters and rest[1:3] == ":\\":
            prefix = 3
        else:
            continue
        if len(rest) > prefix and rest[prefix] not in _NOT_A_NAME:
            return True
    return False


#: What ends a step in scripts written without spaces: 。？！；
_WIDE_STOPS = "\u3002\uff1f\uff01\uff1b"
_STEP_WORDS = ("and", "then")


def _word_char(c: str) -> bool:
    return (c.isascii() and c.isalnum()) or not c.isascii()


def steps(text: str) -> list[str]:
    """A task's steps, in order: ``text`` cut at ``.``, ``?``, ``!`` or ``;``
    followed by white space or the end, at 。？！； anywhere, and at the words
    "and" and "then" (any ASCII case, with no ASCII letter or digit nor a
    character past ASCII right before or after). The cuts belong to no step;
    a step may be empty."""
    text = text_of(text)
    out: list[str] = []
    start = i = 0
    while i < len(text):
        c = text[i]
        cut = 0
        if c in ".?!;" and (i + 1 == len(text) or text[i + 1] in _SPACE):
            cut = 1
        elif c in _WIDE_STOPS:
            cut = 1
        elif i == 0 or not _word_char(text[i - 1]):
            for word in _STEP_WORDS:
                end = i + len(word)
                piece = text[i:end]
                if (piece.isascii() and piece.lower() == word
                        and (end == len(text) or not _word_char(text[end]))):
                    cut = len(word)
                    break
        if cut:
            out.append(text[start:i])
            i += cut
            start = i
        else:
            i += 1
    out.append(text[start:])
    return out


def _idf(count: int, total: int) -> float:
    return math.log(1.0 + (total - count + 0.5) / (count + 0.5))


class _Documents:
    """BM25F over documents of :data:`FIELDS`: each term's contribution to each
    document, computed when asked."""

    def __init__(self, fields_of: list[list[list[str]]], ranking: Ranking, k1: float) -> None:
        self.weights = ranking.weights
        self.k1, self.b = k1, ranking.b
        self.counts = [[_count(terms) for terms in doc] for doc in fields_of]
        self.lengths = [[len(terms) for terms in doc] for doc in fields_of]
        total = len(fields_of)
        self.total = total
        self.averages = [
            sum(lengths[f] for lengths in self.lengths) / total if total else 0.0
            for f in range(len(FIELDS))
        ]
        self.df: dict[str, int] = {}
        for counts in self.counts:
            seen: set[str] = set()
            for f, field_counts in enumerate(counts):
                if self.weights[f] > 0:
                    seen.update(field_counts)
            for term in seen:
                self.df[term] = self.df.get(term, 0) + 1

    def contribution(self, doc: int, term: str) -> float:
        """BM25F of one term in one document (0 when it is not there)."""
        count = self.df.get(term, 0)
        if count == 0:
            return 0.0
        x = 0.0
        for f in range(len(FIELDS)):
            weight = self.weights[f]
            tf = self.counts[doc][f].get(term, 0)
            if weight > 0 and tf > 0:
                norm = 1.0 - self.b + self.b * self.lengths[doc][f] / self.averages[f]
                x += weight * tf / norm
        return _idf(count, self.total) * x / (self.k1 + x) if x > 0 else 0.0

    def score(self, doc: int, groups: list[tuple[str, list[str]]], weight: float) -> float:
        """Per ``(term, synonyms)`` in order, the best of the term's
        contribution and ``weight`` times each synonym's, added up."""
        total = 0.0
        for term, synonyms in groups:
            value = self.contribution(doc, term)
            for synonym in synonyms:
                value = max(value, weight * self.contribution(doc, synonym))
            total += value
        return total


def _count(terms: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for term in terms:
        counts[term] = counts.get(term, 0) + 1
    return counts


class SearchIndex:
    """The tools' text, tokenized once; scores and rankings per query.

    ``texts`` holds one tuple per tool in :data:`FIELDS` order (each a ``str``
    or None). Servers are the distinct ``server`` values; a tool without one
    has no server evidence.
    """

    def __init__(self, texts: Iterable[Sequence[str | None]],
                 ranking: Ranking | None = None) -> None:
        self.ranking = ranking or Ranking()
        docs: list[list[list[str]]] = []
        servers: list[str | None] = []
        for text in texts:
            weights = self.ranking.weights
            fields_of = [tokens(value, f in _CAMEL) if value is not None and weights[f] > 0
                         else [] for f, value in enumerate(text)]
            docs.append(fields_of)
            server_id = text[_SERVER]
            servers.append(None if server_id is None else text_of(server_id))
        self.tools = _Documents(docs, self.ranking, self.ranking.k1)
        self.server_of: list[int | None] = []
        ids: dict[str, int] = {}
        merged: list[list[list[str]]] = []
        for doc, server in zip(docs, servers, strict=True):
            if server is None:
                self.server_of.append(None)
                continue
            if server not in ids:
                ids[server] = len(merged)
                merged.append([[] for _ in FIELDS])
                merged[-1][_SERVER] = list(doc[_SERVER])
            at = ids[server]
            self.server_of.append(at)
            for f in range(len(FIELDS)):
                if f != _SERVER:
                    merged[at][f].extend(doc[f])
        self.servers = _Documents(merged, self.ranking, self.ranking.server_k1)

    def __len__(self) -> int:
        return len(self.server_of)

    def query_terms(self, query: str) -> list[str]:
        """The query's distinct terms, in order of first appearance; then,
        when it mentions a path (and ``path_words`` is on), those of
        :data:`PATH_WORDS` it lacks."""
        terms = tokens(query)
        if self.ranking.path_words and mentions_path(query):
            terms += [term for word in PATH_WORDS for term in tokens(word)]
        return list(dict.fromkeys(terms))

    def has_terms(self, query: str) -> bool:
        return bool(self.query_terms(query))

    def parts(self, query: str) -> list[str]:
        """The whole query, then (with ``steps`` on) each of its :func:`steps`
        that has a term, when there are two or more of those."""
        each = [step for step in steps(query) if self.has_terms(step)] if self.ranking.steps else []
        return [query, *each] if len(each) >= 2 else [query]

    def scores(self, query: str, among: Sequence[int] | None = None) -> list[float]:
        """The score of each tool of ``among`` (default: all, in order): its
        :meth:`part_scores` for the query, or, for a query of several steps,
        the sum of those of the whole query and of each step (in that order)."""
        parts = self.parts(query)
        if len(parts) == 1:
            return self.part_scores(query, among)
        places = list(range(len(self))) if among is None else list(among)
        totals = [0.0] * len(places)
        for part in parts:
            for j, value in enumerate(self.part_scores(part, places)):
                totals[j] += value
        return totals

    def part_scores(self, query: str, among: Sequence[int] | None = None) -> list[float]:
        """The score of each tool of ``among`` (default: all, in order):
        ``tool / best tool + server_evidence * server / best server``, the
        bests taken over ``among``; 0 for all when no term of the query is in
        the index."""
        places = list(range(len(self))) if among is None else list(among)
        terms = self.query_terms(query)
        weight = self.ranking.synonyms
        groups = [(term, [s for s in sorted(synonyms_of(term)) if s not in terms]
                   if weight > 0 else []) for term in terms]
        own = [self.tools.score(i, groups, weight) for i in places]
        alpha = self.ranking.server_evidence
        server_scores: dict[int, float] = {}
        if alpha > 0:
            for i in places:
                server = self.server_of[i]
                if server is not None and server not in server_scores:
                    server_scores[server] = self.servers.score(server, groups, weight)
        best = max(own, default=0.0)
        best_server = max(server_scores.values(), default=0.0)
        out = []
        for i, score in zip(places, own, strict=True):
            value = score / best if best > 0 else 0.0
            server = self.server_of[i]
            if alpha > 0 and best_server > 0 and server is not None:
                value += alpha * (server_scores[server] / best_server)
            out.append(value)
        return out

    def rank(self, query: str, limit: int, among: Sequence[int] | None = None,
             matched_only: bool = False) -> list[int]:
        """The places (into ``among``, default all tools) of the best ``limit``
        tools, best first; equal scores in input order. ``matched_only``: only
        tools scoring above 0 (a term of the query in them or in their server's
        tools), unless the query has no term."""
        places = list(range(len(self))) if among is None else list(among)
        scores = self.scores(query, places)
        candidates = list(range(len(places)))
        if matched_only and self.has_terms(query):
            candidates = [j for j in candidates if scores[j] > 0]
        order = sorted(candidates, key=lambda j: (-scores[j], j))
        return order[:limit]


class ToolIndex(ToolIndexBase):
    """Reference ToolIndex: same API and rankings as ``toolfilter_fast.relevance.ToolIndex``."""

    __slots__ = ()

    def _make_engine(self, tools: tuple[Any, ...], ranking: Ranking) -> Engine:
        return SearchIndex([tool_text(tool) for tool in tools], ranking)
