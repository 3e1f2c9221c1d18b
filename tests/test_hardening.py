"""Regression tests for the red-team defects: a use-after-free in the batches,
a set subclass's ``__contains__`` skipped, a failed compile that kept compiling,
a hidden server listed, state shared across interpreters, the current directory
imported by the CLI, and small divergences from the reference.

Each test failed (or crashed) before its fix. The crash reproducers run in a
child process, so that a regression fails one test with the child's output
instead of killing the run. CI runs this file a second time with
``PYTHONMALLOC=debug``: freed memory is then poisoned, so a read after free
shows as a wrong byte or a crash rather than passing by luck.
"""

from __future__ import annotations

import gc
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolfilter_fast
from toolfilter_fast import GroupFilter, Tool, ToolCatalog, reference

# --- 1. a finalizer run by a batch frees the string it is about to copy --------------

_FREED_NAME = """
import sys
import toolfilter_fast as tf
from toolfilter_fast import Tool, reference

method, threads, impl_name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
impl = tf if impl_name == "fast" else reference
victim = Tool("srv", "x" * (4 << 20))

class Dying(str):
    # Dropped by the batch after its bytes are copied; its finalizer frees the
    # name of the next tool, which the batch used to hold only borrowed.
    def __del__(self):
        object.__setattr__(victim, "name", "short")

class Duck:
    name = "dname"
    @property
    def server_id(self):
        return Dying("dsrv")

f = impl.compile(exclude=["srv/x*", "nothing/here"])
tools = [Duck(), victim] + [Tool("srv", f"t{i}") for i in range(20_000)]
call = getattr(f, method)
answer = call(tools, threads=threads) if method.startswith("static") else call(tools, None, threads=threads)
if method.endswith("filter"):
    place = {id(t): i for i, t in enumerate(tools)}
    answer = [place[id(t)] for t in answer]
print(answer[:3], len(answer))
"""


@pytest.mark.parametrize("threads", [1, 2, 7])
@pytest.mark.parametrize("method", ["static_mask", "mask", "static_filter", "filter"])
def test_a_finalizer_run_by_a_batch_cannot_free_what_it_reads(method, threads):
    def run(impl_name):
        done = subprocess.run(
            [sys.executable, "-c", _FREED_NAME, method, str(threads), impl_name],
            capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, f"{impl_name}: rc {done.returncode}\n{done.stderr[-2000:]}"
        return done.stdout

    # The finalizer runs while the duck is read, before the victim is: both
    # implementations then see the victim's new name ("short", visible).
    assert run("fast") == run("reference")


def test_a_collection_during_a_lens_scan_cannot_free_a_name():
    # A name with a lone surrogate makes the core allocate an exception while
    # it holds the name borrowed; a collection started then ran a callback
    # that replaced the name, freeing it.
    tools = [{"name": f"s.w.\ud800{i}" + "x" * 100_000, "description": "d"} for i in range(50)]
    tools += [{"name": "s.w.go", "description": "d"}]
    rounds = iter(range(10**9))

    def replace(phase, info):
        # Fresh names (still with a surrogate, still the widget's and
        # distinct): every collection frees the names the scan may hold.
        if phase == "start":
            n = next(rounds)
            for i, tool in enumerate(tools[:-1]):
                tool["name"] = f"s.w.\ud800{i}-{n}" + "x" * 1000

    threshold = gc.get_threshold()
    gc.callbacks.append(replace)
    gc.set_threshold(1)
    try:
        kept = toolfilter_fast.FocusLens.filter(tools, "focused", session_id="s", focused_id="w",
                                                max_tools=100)
    finally:
        gc.callbacks.remove(replace)
        gc.set_threshold(*threshold)
    # Every name is the widget's and distinct, before and after the callback.
    assert [id(t) for t in kept] == [id(t) for t in tools]


# --- 2. a set subclass's own __contains__ decides MCP origin --------------------------


class EveryFlatNameIsMcp(set):
    """Says every ``server__tool`` name is MCP-origin, whatever it holds."""

    def __contains__(self, name):
        return "__" in name


@pytest.mark.parametrize("mcp_names", [EveryFlatNameIsMcp(), EveryFlatNameIsMcp({"fs__read"})])
def test_a_set_subclass_decides_origin_by_its_own_contains(mcp_names):
    groups = [{"mode": "always", "tools": ["fs__*"]}]
    names = ["shell__rm_rf", "fs__read", "plain"]
    for impl in (toolfilter_fast, reference):
        f = impl.GroupFilter(groups)
        assert f.visible_names(names, "hi", mcp_names) == ["fs__read", "plain"]
        assert f.excluded_names(names, "hi", mcp_names) == ["shell__rm_rf"]


def test_a_frozenset_subclass_too():
    class Frozen(frozenset):
        def __contains__(self, name):
            return True

    f = GroupFilter([{"mode": "always", "tools": ["fs__*"]}])
    assert f.visible_names(["shell__rm_rf", "fs__x"], "m", Frozen()) == ["fs__x"]
    assert reference.GroupFilter([{"mode": "always", "tools": ["fs__*"]}]).visible_names(
        ["shell__rm_rf", "fs__x"], "m", Frozen()) == ["fs__x"]


# --- 4. a failed compile stops its helper's work ----------------------------------------


def _threads() -> list[str]:
    tasks = pathlib.Path("/proc/self/task")
    return [(t / "comm").read_text().strip() for t in tasks.iterdir()] if tasks.exists() else []


def _rss_mib() -> float:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.skipif(not pathlib.Path("/proc/self/task").exists(), reason="counts threads in /proc (Linux)")
def test_failed_compiles_add_no_threads_and_keep_no_memory():
    exclude = [f"*/Ex_{i}_*_{i % 97}" for i in range(30_000)]
    include = [f"srv{i}/in_{i}*" for i in range(30_000)] + [("x", "not compiled")]
    toolfilter_fast.compile(include=include[:-1], exclude=exclude)  # the helper, started
    before_threads = len(_threads())
    before_rss = _rss_mib()
    for _ in range(25):
        with pytest.raises(toolfilter_fast.PatternError, match=r"include\[30000\]"):
            toolfilter_fast.compile(include=include, exclude=exclude)
    assert len(_threads()) <= before_threads, _threads()
    assert "toolfilter-job" not in _threads()
    # Each abandoned compile held some 50 MB while it ran on a thread of its
    # own; 25 of them at once reached a gigabyte.
    assert _rss_mib() - before_rss < 300
    f = toolfilter_fast.compile(include=include[:-1], exclude=exclude)
    assert f.visible(Tool("srv7", "in_7x")) and not f.visible(Tool("srv7", "ex-3-y-3"))


# --- 5. a server whose every tool is hidden is not listed -----------------------------


def test_server_ids_lists_only_servers_with_a_visible_tool(impl):
    f = impl.compile(exclude=["internal-admin/*", lambda tool, ctx: tool.name == (ctx or {}).get("hide")])
    catalog = ToolCatalog(f)
    catalog.refresh("internal-admin", [Tool("internal-admin", "drop_db")])
    catalog.refresh("github", [Tool("github", "a"), Tool("github", "b")])
    catalog.refresh("solo", [Tool("solo", "only")])
    assert catalog.server_ids() == ["github", "solo"]
    assert catalog.server_ids({"hide": "only"}) == ["github"]
    assert catalog.server_ids({"hide": "a"}) == ["github", "solo"]


# --- 6. one interpreter only ----------------------------------------------------------


def test_a_sub_interpreter_is_refused_and_the_main_one_keeps_its_fast_paths():
    script = textwrap.dedent("""
        import _xxsubinterpreters as interpreters
        sub = interpreters.create()
        try:
            interpreters.run_string(sub, "import toolfilter_fast")
            print("sub: imported")
        except Exception as err:
            print("sub:", err)
        import re
        import toolfilter_fast
        from toolfilter_fast import _tool, filter as module
        f = toolfilter_fast.compile(include=[("*", re.compile("x"))])
        build = toolfilter_fast._core.StaticBuild([("*", re.compile("x"))], [])
        print("main:", _tool.FAST_READ, len(build.regexes("include")), len(build.others("include")))
    """)
    pytest.importorskip("_xxsubinterpreters", reason="CPython's sub-interpreter module")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    sub, main = done.stdout.splitlines()
    assert "ImportError" in sub and "sub-interpreter" in sub
    assert main == "main: True 1 0"


# --- 7. the CLI imports nothing from the working directory ----------------------------


_SHADOW = 'open("SHADOW-RAN", "w").write(__name__)\nraise SystemExit("a module of the working directory ran")\n'


# `python -m` itself puts the working directory first while it imports the
# package (Python's rule; `-P` turns it off), so that form is checked with the
# modules the command imports later, lazily.
@pytest.mark.parametrize(("command", "shadowed"), [
    (["toolfilter"], ("platform", "statistics", "json", "random", "csv")),
    (["-m", "toolfilter_fast"], ("platform", "statistics")),
])
def test_bench_runs_no_module_of_the_working_directory(tmp_path, command, shadowed):
    for name in shadowed:
        (tmp_path / f"{name}.py").write_text(_SHADOW)
    scripts = os.path.dirname(sys.executable)
    exe = [os.path.join(scripts, "toolfilter")] if command == ["toolfilter"] else [sys.executable, *command]
    done = subprocess.run([*exe, "bench", "--sizes", "100", "--counts", "10", "--format", "json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert not (tmp_path / "SHADOW-RAN").exists()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sizes"] == [100]


def test_config_callables_resolve_beside_the_config_then_the_working_directory(tmp_path, monkeypatch):
    policy_dir = tmp_path / "conf"
    policy_dir.mkdir()
    (policy_dir / "beside_policy.py").write_text("def hide(tool, ctx):\n    return tool.name == 'x'\n")
    config = policy_dir / "filter.toml"
    config.write_text('[filter]\nexclude = [{callable = "beside_policy:hide"}]\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    sys.modules.pop("beside_policy", None)
    path_before = list(sys.path)
    f = toolfilter_fast.ToolFilter.from_file(config)
    assert sys.path == path_before  # the config's directory was searched for that import only
    assert not f.visible(Tool("s", "x")) and f.visible(Tool("s", "y"))
    # A module that is nowhere: the error says where it looked.
    config.write_text('[filter]\nexclude = [{callable = "nowhere_policy:hide"}]\n')
    with pytest.raises(toolfilter_fast.ConfigError) as raised:
        toolfilter_fast.ToolFilter.from_file(config)
    message = str(raised.value)
    assert str(policy_dir) in message and str(elsewhere) in message and "then sys.path" in message


# --- 8. fast and reference agree, message text included ------------------------------


def test_a_tool_with_an_unset_field_is_the_same_type_error(impl):
    unset = object.__new__(Tool)
    f = impl.compile(include=["*"])
    for call in (f.visible, f.static_visible):
        with pytest.raises(TypeError) as raised:
            call(unset)
        assert str(raised.value) == "expected a Tool (an object with server_id and name), got Tool"
    for call in (f.static_mask, f.mask, f.filter, f.static_filter):
        with pytest.raises(TypeError) as raised:
            call([Tool("s", "a"), unset])
        assert str(raised.value) == "tools[1]: expected a Tool (an object with server_id and name), got Tool"


@pytest.mark.parametrize("bad", [[Tool("s", "a"), 5], [Tool("s", "a"), Tool("s", "b"), object()]])
def test_batch_type_errors_are_the_same_words(bad):
    messages = []
    for impl in (toolfilter_fast, reference):
        f = impl.compile(include=["*"])
        with pytest.raises(TypeError) as raised:
            f.static_mask(bad)
        messages.append(str(raised.value))
    assert messages[0] == messages[1]


class Liar(str):
    """A str whose own methods lie about its characters."""

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__

    def __iter__(self):
        return iter("*")

    def __contains__(self, item):
        return False

    def __getitem__(self, index):
        return "*"

    def __len__(self):
        return 0

    def split(self, *args, **kwargs):
        return ["*", "*"]

    def lower(self):
        return "*"


def test_str_subclasses_are_decided_by_their_value_in_both_implementations():
    cases = [
        (dict(include=[Liar("github/*")]), Tool(Liar("gitlab"), "x")),
        (dict(include=[Liar("github/*")]), Tool("github", Liar("x"))),
        (dict(exclude=[Liar("*/delete_*")]), Tool("s", Liar("Delete-Repo"))),
        (dict(exclude=[Liar("*/delete_*")]), Tool(Liar("s"), "keep")),
        (dict(include=[Liar("a/b/c")]), Tool("a", Liar("b/c"))),
        (dict(include=[Liar("a/b/c")]), Tool("a", "b")),
        (dict(exclude=[(Liar("git*"), __import__("re").compile("^x"))]), Tool(Liar("github"), "xy")),
    ]
    for options, tool in cases:
        fast = toolfilter_fast.compile(**options)
        ref = reference.compile(**options)
        plain = toolfilter_fast.compile(**{k: [p if not isinstance(p, str) else str.__str__(p) for p in v]
                                           for k, v in options.items()})
        want = plain.visible(Tool(str.__str__(tool.server_id), str.__str__(tool.name)))
        assert fast.visible(tool) == ref.visible(tool) == want, (options, tool)
        assert fast.static_mask([tool]) == ref.static_mask([tool]) == [want]


def test_groups_and_lens_decide_str_subclasses_by_value():
    groups = [{"mode": "dynamic", "tools": [Liar("fs__*")], "keywords": [Liar("file")]}]
    names = [Liar("fs__read"), Liar("web__get"), "fs__write"]
    for impl in (toolfilter_fast, reference):
        f = impl.GroupFilter(groups)
        mcp = set(map(str.__str__, names))
        assert [str.__str__(n) for n in f.visible_names(names, "a FILE please", mcp)] == ["fs__read", "fs__write"]
        assert f.visible_names(names, "nothing", mcp) == []
    tools = [{"name": Liar("s.w.a")}, {"name": Liar("other")}, {"name": Liar("s.v.b")}]
    for impl in (toolfilter_fast, reference):
        kept = impl.FocusLens.filter(tools, "focused", session_id="s", focused_id="w")
        assert [str.__str__(t["name"]) for t in kept] == ["s.w.a", "other"]


# --- mixed batches, compared with the reference on every thread count ------------------


class SubTool(Tool):
    """A Tool subclass: the core must not read it through the slots."""

    __slots__ = ()


class DuckTool:
    """An object with the two attributes, one of them a property."""

    def __init__(self, server_id, name):
        self._server_id, self.name = server_id, name

    @property
    def server_id(self):
        return self._server_id


class MortalStr(str):
    """A str subclass with a finalizer that runs Python code when freed."""

    deaths = 0

    def __del__(self):
        MortalStr.deaths += 1


class MadeOnRead:
    """Makes a fresh, finalizable string on every read (no other holder)."""

    def __init__(self, server_id, name):
        self._pair = (server_id, name)

    @property
    def server_id(self):
        return MortalStr(self._pair[0])

    @property
    def name(self):
        return MortalStr(self._pair[1])


_text = st.text(alphabet=st.sampled_from("ab/:*_-.ΣİK\u212a\x00\ud800A"), max_size=6)
_kinds = st.sampled_from(["tool", "sub", "duck", "made", "mortal"])


def _item(kind, server_id, name):
    if kind == "tool":
        return Tool(server_id, name)
    if kind == "sub":
        return SubTool(server_id, name)
    if kind == "duck":
        return DuckTool(server_id, name)
    if kind == "made":
        return MadeOnRead(server_id, name)
    return Tool(MortalStr(server_id), MortalStr(name))


@settings(deadline=None)
@given(
    items=st.lists(st.tuples(_kinds, _text, _text), max_size=40),
    include=st.lists(_text.filter(bool), max_size=3),
    exclude=st.lists(_text.filter(bool), max_size=3),
    threads=st.sampled_from([None, 1, 2, 7]),
    pad=st.sampled_from([0, 9_000, 20_000]),
)
def test_mixed_batches_equal_the_reference(items, include, exclude, threads, pad):
    try:
        ref = reference.compile(include=include, exclude=exclude)
    except toolfilter_fast.PatternError:
        return
    fast = toolfilter_fast.compile(include=include, exclude=exclude)
    # Padding with exact Tools makes the batch span blocks and threads, with
    # the odd items first: the part after them is read from the snapshot.
    tools = [_item(*item) for item in items] + [Tool("pad", "p")] * pad
    # The reference on the odd items, and once for the padding (all alike).
    head = [tool for tool in tools[:len(items)]]
    pad_visible = ref.static_visible(Tool("pad", "p"))
    want = ref.static_mask(head) + [pad_visible] * pad
    assert fast.static_mask(tools, threads=threads) == want
    assert fast.mask(tools, {"u": 1}, threads=threads) == ref.mask(head, {"u": 1}) + [pad_visible] * pad
    kept = fast.static_filter(tools, threads=threads)
    assert [id(t) for t in kept] == [id(t) for t, w in zip(tools, want, strict=True) if w]
    pairs = [(str.__str__(t.server_id), str.__str__(t.name)) for t in tools]
    assert fast.static_mask_pairs(pairs, threads=threads) == want
