"""The ranked tool search: tokens and rankings by example, hostile text, bad
arguments, the scorer hook, and Hypothesis comparing the core's scores with
the reference's on random catalogs and queries (exactly: both add the same
floats in the same order)."""

from __future__ import annotations

import gc
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolfilter_fast import Tool, _core
from toolfilter_fast.reference import relevance as reference_relevance
from toolfilter_fast.relevance import SCORER_WEIGHT, Ranking, ToolIndex, mix_scores, tool_text
from toolfilter_fast.relevance.options import check_scorer

CATALOG = [
    Tool("weather", "get_weather_by_city", "Current weather and forecast for a city"),
    Tool("filesystem", "write_file", "Create a new file or overwrite an existing one",
         input_schema={"type": "object", "properties": {"path": {"description": "Where"},
                                                         "content": {}}}),
    Tool("filesystem", "read_file", "Read the complete contents of a file"),
    Tool("maps", "geocode_address", "Convert an address or place name to coordinates"),
    Tool("maps", "reverse_geocode", "Convert coordinates to a detailed address"),
    Tool("maps", "find_nearby_places", "Find restaurants, parks and shops near a point"),
    Tool("trends", "get-douban-rank", "获取豆瓣实时热门书籍、电影排行榜"),
    Tool("bazi", "getBaziDetail", "根据时间获取八字信息"),
]

IMPLS = {"fast": ToolIndex, "reference": reference_relevance.ToolIndex}


@pytest.fixture(params=sorted(IMPLS))
def index_cls(request):
    return IMPLS[request.param]


def names(tools):
    return [tool.name for tool in tools]


@pytest.mark.parametrize(("text", "camel", "want"), [
    ("get_weather_by_city", True, ["get", "weather", "citi"]),
    ("getBaziDetail", True, ["get", "bazi", "detail"]),
    ("github/list-issues.v2", True, ["github", "list", "issu", "v2"]),
    ("getBaziDetail", False, ["getbazidetail"]),
    ("HTMLParser", True, ["html", "parser"]),
    ("WeChat iPhone", False, ["wechat", "iphon"]),
    ("I'm looking at a PR", False, ["look", "pr"]),
    ("获取热榜", False, ["获取", "取热", "热榜"]),
    ("36氪 top", False, ["36", "氪", "top"]),
    ("ab\ud800cd", False, ["ab", "cd"]),
    ("file\x00path", False, ["file", "path"]),
    ("ΣΟΦΊΑ", False, ["σοφία"]),
    ("", False, []),
])
def test_tokens(text, camel, want):
    assert _core.search_terms(text, camel) == want
    assert reference_relevance.tokens(text, camel) == want


def test_both_keep_the_same_stop_words():
    assert sorted(_core.search_stopwords()) == sorted(reference_relevance.STOPWORDS)


def test_both_keep_the_same_synonyms():
    assert _core.search_synonyms() == list(reference_relevance.SYNONYMS)
    assert _core.search_formats() == list(reference_relevance.FORMATS)
    for line in reference_relevance.SYNONYMS + reference_relevance.FORMATS:
        for word_ in line.split():
            assert len(reference_relevance.tokens(word_)) == 1, word_


def test_synonyms_reach_tools_at_a_lower_weight(index_cls):
    on, off = index_cls(CATALOG), index_cls(CATALOG, Ranking(synonyms=0.0))
    # "record" is in no tool; its synonym "write" is.
    assert names(off.search("record my notes", 3)) == []
    assert names(on.search("record my notes", 1)) == ["write_file"]
    assert "write_file" in names(on.search("save it", 3))
    # A tool's own word counts more than a synonym of it.
    pair = index_cls([Tool("a", "write_note", "Write a note"),
                      Tool("b", "record_note", "Record a note")], Ranking(server_evidence=0))
    assert names(pair.search("write", 2)) == ["write_note", "record_note"]
    assert names(pair.search("record", 2)) == ["record_note", "write_note"]
    assert 0 < pair.scores("record")[0] < pair.scores("record")[1]
    assert names(on.search("fetch the forecast", 1)) == ["get_weather_by_city"]
    assert Ranking().synonyms == 0.7
    with pytest.raises(ValueError, match="synonyms"):
        Ranking(synonyms=1.5)
    assert Ranking.from_mapping({"synonyms": 0.3}) == Ranking(synonyms=0.3)
    assert "record" in reference_relevance.synonyms_of("save")
    # Words WordNet does not relate are no synonyms (they were, in the lexicon before).
    assert "store" not in reference_relevance.synonyms_of("save")


def test_the_lexicon_reaches_file_formats_and_finance(index_cls):
    tools = [Tool("office", "excel_read_sheet", "Read the cells of a workbook"),
             Tool("office", "add_slide", "Add a slide to a presentation"),
             Tool("markets", "get_ticker_info", "Quote and profile of a ticker share"),
             Tool("files", "write_file", "Write text to a path")]
    index, off = index_cls(tools), index_cls(tools, Ranking(synonyms=0.0))
    # "xlsx", "pptx" and "stock" are in no tool; the words they stand for are.
    assert off.search("open budget.xlsx", 4) == []
    assert names(index.search("open budget.xlsx", 1)) == ["excel_read_sheet"]
    assert names(index.search("a pptx deck", 1)) == ["add_slide"]
    assert names(index.search("stock quote", 1)) == ["get_ticker_info"]
    # A word of two groups has the synonyms of both: picture ~ image, picture ~ photo,
    # but photo is no synonym of image; an extension stands for its media type's word.
    assert {"imag", "photo"} <= reference_relevance.synonyms_of("pictur")
    assert "imag" not in reference_relevance.synonyms_of("photo")
    assert reference_relevance.synonyms_of("png") == {"imag"}


def test_a_word_of_the_name_outweighs_repeats_in_the_description(index_cls):
    tools = [Tool("a", "translate_text", "Turn text from one language into another"),
             Tool("b", "dictionary", "Translate text; translate a phrase"),
             Tool("c", "get_time", "The current time"),
             Tool("d", "weather", "Forecast for a city")]
    assert (Ranking().name, Ranking().description) == (2.0, 0.5)
    assert names(index_cls(tools).search("translate", 2)) == ["translate_text", "dictionary"]
    # Under the weights before (name 1.5, description 1), the description's repeats won.
    before = Ranking(name=1.5, description=1.0)
    assert names(index_cls(tools, before).search("translate", 2)) == ["dictionary",
                                                                      "translate_text"]


def test_the_matching_tools_rank_first(index_cls):
    index = index_cls(CATALOG)
    assert names(index.search("What's the weather in Paris?", 1)) == ["get_weather_by_city"]
    assert names(index.search("read my file", 1)) == ["read_file"]
    assert names(index.search("豆瓣电影排行", 1)) == ["get-douban-rank"]
    assert names(index.search("八字", 1)) == ["getBaziDetail"]
    # A parameter's name counts once its field has a weight.
    assert index.search("path", 5) == []
    with_params = index_cls(CATALOG, Ranking(params=1.0))
    # read_file: no "path" of its own, but its server's write_file has one.
    assert names(with_params.search("path", 5)) == ["write_file", "read_file"]
    assert names(index_cls(CATALOG, Ranking(params=1.0, server_evidence=0)).search("path")) == [
        "write_file"]


def test_title_and_server_id_are_searched(index_cls):
    tools = [{"name": "t1", "title": "Stock Quotes", "description": "Prices", "server_id": "a"},
             {"name": "t2", "description": "Quotes of the day", "server_id": "b"},
             {"name": "t3", "description": "Lookup", "server_id": "wikipediaSearch"}]
    index = index_cls(tools)

    def found(query):
        return [tool["name"] for tool in index.search(query, 5)]

    assert found("stock") == ["t1"]
    assert sorted(found("quotes")) == ["t1", "t2"]
    # The server id is cut at camelCase like a name.
    assert found("search wikipedia") == ["t3"]
    assert index_cls(tools, Ranking(title=0.0)).search("stock", 5) == []


def test_server_evidence_lifts_the_servers_other_tools(index_cls):
    query = "restaurants near an address"
    plain = index_cls(CATALOG, Ranking(server_evidence=0.0)).scores(query)
    lifted = index_cls(CATALOG).scores(query)
    assert lifted[4] > plain[4] > 0  # reverse_geocode: "address", and its server's restaurants
    assert lifted[0] == plain[0] == 0


def test_server_k1_grades_a_server_by_how_much_of_it_is_about_the_word(index_cls):
    """A server is one long document: at a tool's k1 a word anywhere in it
    counts nearly in full; a larger server_k1 favours the server that is
    about the word, and leaves the tools' own scores alone."""
    tools = [
        Tool("desk", "keep_note", "Keep a note"),
        Tool("desk", "send_mail", "Send an email to a contact"),
        Tool("desk", "add_event", "Add an event to the calendar"),
        Tool("desk", "get_weather", "Weather forecast for a city"),
        Tool("notes", "add_note", "Add a note to the notebook"),
        Tool("notes", "find_note", "Find a note by its title"),
        Tool("notes", "delete_note", "Delete a note"),
    ]
    assert Ranking().server_k1 == 3.0

    def scores(server_k1, server_evidence=1.0):
        ranking = Ranking(server_k1=server_k1, server_evidence=server_evidence)
        return index_cls(tools, ranking).scores("note")

    # send_mail holds no "note": what it has is its server's share of the best server's.
    assert 0 < scores(6.0)[1] < scores(1.2)[1]
    assert scores(6.0, 0.0) == scores(1.2, 0.0)
    assert Ranking.from_mapping({"server_k1": 2}) == Ranking(server_k1=2.0)


@pytest.mark.parametrize("mentions_path", [_core.search_mentions_path,
                                           reference_relevance.mentions_path])
def test_what_counts_as_a_path(mentions_path):
    for text in ["/root/notes.md", "save it to /root/a", "~/a", "(./b)", '"../c"', "`/login`",
                 "x\n/y", "C:\\data", "d:\\x y", "x\x0b/y", "/é"]:
        assert mentions_path(text), text
    for text in ["and/or", "1 / 2", "https://example.com/a", "/", "//x", "a ~/", ".../x",
                 "C:/x", "CD:\\x", "x:\\\\y", "/ x", "", "\u3000/x", "\x85/x", "~x", "/\\x"]:
        assert not mentions_path(text), text


def test_a_path_in_the_message_asks_for_file_tools(index_cls):
    """A path names a file: the query also asks for "file" and "path", after
    its own words; ``path_words=False`` turns that off."""
    tools = [
        Tool("notes", "keep_note", "Keep a note for later"),
        Tool("files", "write_file", "Create or overwrite a file at a path"),
        Tool("files", "list_directory", "List the entries of a directory"),
    ]
    on = index_cls(tools)
    off = index_cls(tools, Ranking(path_words=False))
    query = "keep it in /srv/out.txt"
    assert names(off.search(query)) == ["keep_note"]
    assert names(on.search(query)) == ["keep_note", "write_file", "list_directory"]
    assert on.scores("file path /x") == on.scores("file path")
    assert on.has_terms("/x") and not off.has_terms("/x")
    assert not on.has_terms("and/or 1 / 2")
    assert Ranking().path_words is True
    with pytest.raises(TypeError, match="path_words must be a bool, not int"):
        Ranking(path_words=1)


def test_matched_only_and_queries_without_terms(index_cls):
    index = index_cls(CATALOG)
    assert index.search("zzz qqq", 5) == []
    assert names(index.search("zzz qqq", 2, matched_only=False)) == names(CATALOG[:2])
    assert not index.has_terms("the, and ... of!")
    assert names(index.search("the, and ... of!", 2)) == names(CATALOG[:2])
    assert index.search("weather", 0) == []


def test_among_ranks_a_subset(index_cls):
    index = index_cls(CATALOG)
    picks = index.rank("file", 5, among=[0, 2, 1], matched_only=True)
    assert sorted(picks) == [1, 2]
    assert index.rank("zzz", 2, among=(7, 3)) == [0, 1]
    assert len(index.scores("file", among=[1, 1])) == 2


def test_same_tools_is_identity(index_cls):
    index = index_cls(CATALOG)
    assert index.same_tools(CATALOG)
    assert index.same_tools(tuple(CATALOG))
    assert not index.same_tools(CATALOG[:-1])
    assert not index.same_tools([Tool(t.server_id, t.name, t.description) for t in CATALOG])


def test_mappings_and_objects_are_read_alike():
    mcp = [{"name": t.name, "description": t.description, "server_id": t.server_id}
           for t in CATALOG]
    assert ToolIndex(mcp).scores("convert the address") == ToolIndex(CATALOG).scores(
        "convert the address")
    assert tool_text({"name": 3, "title": "T", "inputSchema": {"properties": {"q": {}}}}) == (
        None, "T", None, None, "q")
    assert tool_text(object()) == (None,) * 5


def test_bad_arguments(index_cls):
    index = index_cls(CATALOG)
    with pytest.raises(TypeError, match="query must be str"):
        index.search(b"weather")
    with pytest.raises(TypeError, match="limit must be an int"):
        index.search("weather", 2.5)
    with pytest.raises(ValueError, match="limit must be an int >= 0"):
        index.search("weather", -1)
    with pytest.raises(TypeError, match="ranking must be a Ranking"):
        index_cls(CATALOG, {"k1": 1})
    with pytest.raises(ValueError, match="k1 must be a finite number > 0"):
        Ranking(k1=0)
    with pytest.raises(ValueError, match="server_k1 must be a finite number > 0"):
        Ranking(server_k1=-1)
    with pytest.raises(ValueError, match="b must be a finite number >= 0 and <= 1"):
        Ranking(b=1.5)
    with pytest.raises(ValueError, match=r"weights\.name"):
        Ranking(name=float("nan"))
    with pytest.raises(TypeError, match=r"weights\.title must be a number"):
        Ranking(title="1")
    with pytest.raises(ValueError, match="unknown field 'names'"):
        Ranking.from_mapping({"weights": {"names": 1}})
    with pytest.raises(TypeError, match="scorer must be callable"):
        index.search("weather", scorer=3)


def test_the_core_refuses_bad_input_without_crashing():
    with pytest.raises(TypeError, match="texts must be a list or tuple"):
        _core.SearchIndex({"a"}, (1, 1, 1, 1, 1), 1.0, 3.0, 0.5, 1.0, 0.6, True, True)
    with pytest.raises(TypeError, match=r"texts\[0\] must be a tuple"):
        _core.SearchIndex(["name"], (1, 1, 1, 1, 1), 1.0, 3.0, 0.5, 1.0, 0.6, True, True)
    with pytest.raises(ValueError, match=r"texts\[0\] must hold 5 fields"):
        _core.SearchIndex([("a", None)], (1, 1, 1, 1, 1), 1.0, 3.0, 0.5, 1.0, 0.6, True, True)
    with pytest.raises(TypeError, match=r"texts\[0\]\[2\] \(description\) must be str"):
        _core.SearchIndex([("a", None, 3, None, None)], (1, 1, 1, 1, 1), 1.0, 3.0, 0.5, 1.0, 0.6, True, True)
    # A field without a weight is not indexed, but still checked.
    with pytest.raises(TypeError, match=r"texts\[1\]\[4\] \(params\) must be str, not bytes"):
        _core.SearchIndex([("a",) + (None,) * 4, ("a", None, None, None, b"x")],
                          (1, 1, 1, 1, 0), 1.0, 3.0, 0.5, 1.0, 0.6, True, True)
    # text_of's answer is checked like a tuple given directly; its error passes through.
    with pytest.raises(TypeError, match=r"texts\[0\] must be a tuple"):
        _core.SearchIndex([object()], (1, 1, 1, 1, 0), 1.0, 3.0, 0.5, 1.0, 0.6, True, True, lambda tool: "name")
    with pytest.raises(ZeroDivisionError):
        _core.SearchIndex([object()], (1, 1, 1, 1, 0), 1.0, 3.0, 0.5, 1.0, 0.6, True, True, lambda tool: 1 / 0)
    with pytest.raises(ValueError, match="k1 must be a finite number"):
        _core.SearchIndex([], (1, 1, 1, 1, 1), float("inf"), 3.0, 0.5, 1.0, 0.6, True, True)
    with pytest.raises(ValueError, match="server_k1 must be a finite number in range, not 0"):
        _core.SearchIndex([], (1, 1, 1, 1, 1), 1.0, 0.0, 0.5, 1.0, 0.6, True, True)
    index = _core.SearchIndex([("a b", None, None, None, None)], (1, 1, 1, 1, 1), 1.0, 3.0, 0.5, 1.0, 0.6, True, True)
    with pytest.raises(ValueError, match=r"among\[1\] = 5 is not a tool index"):
        index.scores("a", [0, 5])
    with pytest.raises(ValueError, match=r"among\[0\] = -1"):
        index.rank("a", 1, [-1])
    with pytest.raises(TypeError, match=r"among\[0\] must be an int"):
        index.rank("a", 1, ["0"])
    with pytest.raises(TypeError, match="query must be str"):
        index.rank(None, 1)


def test_hostile_text_is_indexed(index_cls):
    tools = [
        Tool("s", "a" * (1 << 20), "ab " * (1 << 16)),
        Tool("s", "nul", "\x00" * (1 << 16) + "needle"),
        Tool("s\ud800", "lone\udfffsurrogate", "text \ud83d\ude00 \U0001F600 emoji"),
        Tool("s", "cjk", "字" * (1 << 16)),
    ]
    index = index_cls(tools)
    assert names(index.search("ab", 1)) == [tools[0].name]
    assert names(index.search("needle", 1)) == ["nul"]
    assert names(index.search("surrogate emoji", 1)) == [tools[2].name]
    assert names(index.search("字字", 1)) == ["cjk"]
    assert not index.has_terms("\ud800\udfff")


def test_scorer_replaces_or_mixes(index_cls):
    index = index_cls(CATALOG)

    def by_length(query, tools):
        assert isinstance(query, str)
        return [float(len(tool.name)) for tool in tools]

    longest = max(CATALOG, key=lambda t: len(t.name)).name
    assert names(index.search("weather", 1, scorer=by_length, matched_only=False,
                              scorer_weight=1.0)) == [longest]
    assert names(index.search("weather", 1, scorer=by_length, scorer_weight=0.0)) == [
        "get_weather_by_city"]
    # Matched only: the scorer reorders the tools the query finds (and their
    # servers' tools), and no others.
    found = names(index.search("convert address", 5, scorer=by_length, scorer_weight=1.0))
    assert found == ["find_nearby_places", "geocode_address", "reverse_geocode"]
    # By default the scorer is mixed in at SCORER_WEIGHT, chosen by cross-validation.
    assert index.scores("address", scorer=by_length) == index.scores(
        "address", scorer=by_length, scorer_weight=SCORER_WEIGHT)
    assert SCORER_WEIGHT == 0.2
    mixed = index.scores("address", scorer=by_length, scorer_weight=0.5)
    assert all(0.0 <= score <= 1.0 for score in mixed)


def test_scorer_errors_name_the_scorer():
    with pytest.raises(ValueError, match="returned 1 scores for 2 tools"):
        mix_scores([1.0, 0.5], lambda q, t: [1.0], 1.0, "q", ["a", "b"])
    with pytest.raises(ValueError, match="score 1 is not finite"):
        mix_scores([1.0, 0.5], lambda q, t: [1.0, float("nan")], 1.0, "q", ["a", "b"])
    with pytest.raises(TypeError, match="score 0 must be a number"):
        mix_scores([1.0], lambda q, t: ["1"], 1.0, "q", ["a"])
    with pytest.raises(ValueError, match="scorer_weight must be a finite number"):
        check_scorer(None, 2.0)


# --- the core against the reference ---------------------------------------------

WORDS = ["get", "file", "files", "read", "write", "writing", "Weather", "city", "map", "maps",
         "convert", "getWeather", "HTTPServer", "数据", "获取", "天气", "삼성", "über", "ÉTÉ",
         "Σίσυφος", "the", "and", "a", "x1", "v2", "save", "store", "saving", "fetch",
         "download", "today", "date", "image", "photos", "delete", "remove", "list", "path",
         "/root/a.md", "~/x", "C:\\d", "../up", "then", "Then", "AND", "andthen", "pptx",
         "png", "record", "picture", "end.", "why?", "so!", "x;"]
HOSTILE = ["\x00", "\ud800", "\udfff", "\U0001F600", "\u212a", "İ", "ß", "-", "_", ".", "/",
           " ", "\n", "，", "字", "ǅ", "\u0301", "Ⅻ", "٣", "~", ":", "\\", "`", "(", "\t", "\x0b",
           "\u3000", "\x85", "。", "？", "！", "；", "?", "!", ";"]

word = st.sampled_from(WORDS)
hostile = st.text(st.sampled_from([*HOSTILE, "a", "B", "c"]), max_size=6)
text = st.lists(st.one_of(word, hostile), max_size=8).map(" ".join)
glued = st.lists(st.one_of(word, hostile), max_size=4).map("".join)
field = st.one_of(st.none(), text, glued)
tools_st = st.lists(
    st.tuples(st.one_of(glued, text), field, field, st.sampled_from([None, "s1", "s2", "fooBar"]),
              field),
    max_size=10,
)
ranking_st = st.builds(
    Ranking, name=st.sampled_from([0.0, 1.0, 2.5]), title=st.sampled_from([0.0, 1.0]),
    description=st.sampled_from([0.0, 1.0, 0.3]), server=st.sampled_from([0.0, 1.0]),
    params=st.sampled_from([0.0, 0.5]), k1=st.sampled_from([0.8, 1.2, 2.0]),
    server_k1=st.sampled_from([1.2, 3.0, 0.5]),
    b=st.sampled_from([0.0, 0.75, 1.0]), server_evidence=st.sampled_from([0.0, 0.5, 1.0]),
    synonyms=st.sampled_from([0.0, 0.3, 0.6, 1.0]), path_words=st.booleans(),
    steps=st.booleans(),
)


path_text = st.text(st.sampled_from([*"/~.\\:C \"'`([{<\t\x0b\x0c\r\n\x85\u3000a", "\ud800", "é"]),
                    max_size=12)


@settings(max_examples=500)
@given(st.one_of(text, glued, path_text))
def test_the_core_finds_paths_where_the_reference_does(query):
    assert _core.search_mentions_path(query) == reference_relevance.mentions_path(query)


@settings(max_examples=500)
@given(st.one_of(text, glued, path_text))
def test_the_core_cuts_steps_where_the_reference_does(query):
    assert _core.search_steps(query) == reference_relevance.steps(query)


@settings(max_examples=300)
@given(tools_st, st.one_of(text, glued), ranking_st, st.integers(0, 12))
def test_core_scores_equal_the_reference(texts, query, ranking, limit):
    fast = _core.SearchIndex(texts, ranking.weights, ranking.k1, ranking.server_k1, ranking.b,
                             ranking.server_evidence, ranking.synonyms, ranking.path_words,
                             ranking.steps)
    ref = reference_relevance.SearchIndex(texts, ranking)
    assert fast.scores(query) == ref.scores(query)
    among = list(range(len(texts)))[::2]
    assert fast.scores(query, among) == ref.scores(query, among)
    assert fast.has_terms(query) == ref.has_terms(query)
    for matched_only in (False, True):
        assert fast.rank(query, limit, None, matched_only) == ref.rank(query, limit, None,
                                                                      matched_only)
        assert fast.rank(query, limit, among, matched_only) == ref.rank(query, limit, among,
                                                                       matched_only)


def _assigned(c: str) -> bool:
    # Unicode versions differ between Python and Rust: equivalence is promised for
    # characters assigned in the running Python's unicodedata, as for the folds.
    return unicodedata.category(c) != "Cn"


@given(st.text(st.characters(codec=None).filter(_assigned), max_size=20), st.booleans())
def test_core_tokens_equal_the_reference(text_, camel):
    assert _core.search_terms(text_, camel) == reference_relevance.tokens(text_, camel)


_schema_part = st.one_of(st.none(), st.booleans(), st.integers(0, 3), text,
                         st.dictionaries(st.sampled_from(["description", "type"]),
                                         st.one_of(st.none(), text, st.integers(0, 2)),
                                         max_size=2))
_schema = st.one_of(
    st.none(), st.integers(), text,
    st.fixed_dictionaries({}, optional={
        "properties": st.one_of(st.none(), st.lists(text, max_size=2),
                                st.dictionaries(st.one_of(text, st.integers(0, 3)), _schema_part,
                                                max_size=3)),
        "type": st.just("object")}),
)
_dict_tool = st.fixed_dictionaries({}, optional={
    "name": st.one_of(text, st.integers(0, 3), st.none()), "title": st.one_of(text, st.none()),
    "description": st.one_of(text, st.integers(0, 1)), "server_id": st.one_of(text, st.none()),
    "inputSchema": _schema, "input_schema": _schema,
})


@settings(max_examples=300)
@given(st.lists(_dict_tool, max_size=6), text)
def test_the_core_reads_dicts_as_tool_text_does(tools, query):
    """The binding reads exact dicts itself: the same fields as tool_text
    (with the parameters weighed, and without: then the schema is not read)."""
    for ranking in (Ranking(params=1.0), Ranking(title=0.0)):
        args = (ranking.weights, ranking.k1, ranking.server_k1, ranking.b, ranking.server_evidence,
                ranking.synonyms, ranking.path_words, ranking.steps)
        direct = _core.SearchIndex(tools, *args, tool_text)
        via_python = _core.SearchIndex([tool_text(tool) for tool in tools], *args)
        assert direct.scores(query) == via_python.scores(query)
        for tool in tools:
            assert _core.SearchIndex([tool], *args, tool_text).scores(query) == _core.SearchIndex(
                [tool_text(tool)], *args).scores(query)


def test_a_catalog_read_in_parts_scores_as_the_reference():
    """Past 8,192 tools the core reads the catalog in parts on several threads
    (and builds the servers' postings on another): the scores stay the
    reference's, to the bit, terms first met in a later part included."""
    import random

    rng = random.Random(5)
    pool = [*WORDS, *HOSTILE]
    texts = [
        (f"{rng.choice(WORDS)}_{rng.choice(WORDS)}{i // 3}",
         None if i % 7 == 0 else " ".join(rng.choices(pool, k=rng.randint(0, 9))),
         " ".join(rng.choices(pool, k=rng.randint(0, 12))) + (f" late{i}" if i > 15_000 else ""),
         None if i % 11 == 0 else f"server{i // 25}",
         None)
        for i in range(20_000)
    ]
    ranking = Ranking()
    fast = _core.SearchIndex(texts, ranking.weights, ranking.k1, ranking.server_k1, ranking.b,
                             ranking.server_evidence, ranking.synonyms, ranking.path_words,
                             ranking.steps)
    ref = reference_relevance.SearchIndex(texts, ranking)
    for query in ["get the weather for my city", "save photos", "数据 获取", "late19999 file",
                  "server799 maps", ""]:
        assert fast.scores(query) == ref.scores(query), query
        assert fast.rank(query, 20, None, True) == ref.rank(query, 20, None, True), query


# --- a catalog large enough to be read on threads ----------------------------------

class Described(str):
    """A str subclass whose finalizer runs Python code when the index drops it."""

    dropped = 0

    def __del__(self) -> None:
        Described.dropped += 1


def _large_catalog(count: int) -> list[object]:
    """Dict tools, Tool objects and tuples-by-callback mixed, with hostile text,
    str subclasses and words that first appear late in the catalog."""
    tools: list[object] = []
    for i in range(count):
        words = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(i % 6 + 1))
        hostile = HOSTILE[i % len(HOSTILE)]
        description = f"{words} {hostile} late{i // 3000} n{i % 997}"
        server = f"server{i % 613}" if i % 17 else None
        if i % 3 == 0:
            tools.append({"name": f"tool_{i}{hostile}", "description": Described(description),
                          "server_id": server})
        elif i % 3 == 1:
            tools.append(Tool(server or "", f"getThing{i}", description))
        else:
            tools.append({"name": f"x{i}", "description": description, "server_id": server,
                          "title": "Ti\ud800tle" if i % 5 == 0 else None})
    return tools


def test_a_large_catalog_read_on_threads_scores_as_the_reference():
    # Two parts of 8,192 tools or more: read on two threads where there are two.
    dropped = Described.dropped
    tools = _large_catalog(17_000)
    described = sum(isinstance(t, dict) and isinstance(t["description"], Described) for t in tools)
    fast, ref = ToolIndex(tools), reference_relevance.ToolIndex(tools)
    for query in ["read the file", "weather in the city today", "late3 n5 数据", "getWeather",
                  "/root/a.md and late0", "\ud800 İ Σίσυφος"]:
        assert fast.scores(query) == ref.scores(query), query
        assert fast.rank(query, 25) == ref.rank(query, 25), query
        among = list(range(0, len(tools), 3))
        assert fast.rank(query, 25, among, matched_only=True) == ref.rank(
            query, 25, among, matched_only=True), query
    # The index neither released a description the catalog still holds nor kept one.
    del fast
    assert Described.dropped == dropped
    del ref, tools
    gc.collect()
    assert Described.dropped == dropped + described


class Exploding:
    """A tool whose name is a property that raises."""

    description = "a tool"

    @property
    def name(self) -> str:
        raise RuntimeError("this name cannot be read")


def test_a_tool_that_raises_late_in_a_large_catalog_fails_the_build_cleanly():
    tools = _large_catalog(20_000)
    tools[15_000] = {"name": "ok", "description": 5}  # not a str: read as no description
    assert len(ToolIndex(tools)) == 20_000
    tools[15_000] = Exploding()
    with pytest.raises(RuntimeError, match="this name cannot be read"):
        ToolIndex(tools)
    # The build given up leaves nothing behind: the next one is whole.
    first = tools[:15_000]
    assert ToolIndex(first).scores("late2 file") == reference_relevance.ToolIndex(
        first).scores("late2 file")


def test_each_step_of_a_task_gets_its_tools(index_cls):
    tools = [Tool("news", "get_news", "Latest news headlines"),
             Tool("news", "news_search", "Search news headlines"),
             Tool("files", "put_text", "Write text to a file"),
             Tool("files", "read_file", "Read a file"),
             Tool("files", "list_dir", "List a folder")]
    on = index_cls(tools, Ranking(server_evidence=0.0))
    off = index_cls(tools, Ranking(server_evidence=0.0, steps=False))
    task = "Find the latest news headlines. Then write them to a file"
    # As one query, the news step's words keep put_text below both news tools.
    assert names(off.search(task, 2)) == ["get_news", "news_search"]
    assert names(on.search(task, 2)) == ["get_news", "put_text"]
    # A step's scores are added to the whole query's: each on its own scale.
    whole = off.scores(task)
    first, second = off.scores("Find the latest news headlines"), off.scores(" write them to a file")
    assert on.scores(task) == [0.0 + a + b + c for a, b, c in zip(whole, first, second, strict=True)]
    # One step with terms (the rest stop words) is the query itself.
    assert on.scores("latest news and the") == off.scores("latest news and the")
    assert Ranking.from_mapping({"steps": False}) == Ranking(steps=False)
    with pytest.raises(TypeError, match="steps must be a bool"):
        Ranking(steps=1)
