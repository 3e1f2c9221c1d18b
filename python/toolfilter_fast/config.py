"""Filter configuration files (TOML or JSON) and their validation.

A config file is a table (TOML) or an object (JSON)::

    [filter]
    include = ["github/*", "fs/read_*", {server = "*", regex = "^list_"}]
    exclude = [
        "*/delete_*",
        {server = "*", regex = "^drop_", flags = "i"},
        {callable = "myapp.policy:hidden_for_user"},
    ]

    [[tool_filter_groups]]
    mode = "dynamic"
    tools = ["browser__*"]
    keywords = ["browse", "url"]

    [relevance]
    top_k = 20

    [focus_lens]
    mode = "focused"
    max_tools = 15

    [budget]
    max_tools = 40

    [prompts]
    exclude = ["*/debug_*"]

    [resources]
    include = ["docs/file:///srv/docs/*"]

    [[rename]]
    server = "github"
    tool = "create_issue"
    name = "new_issue"

    [pinning]
    lock = "tools.lock"
    on_new = "hide"
    on_changed = "hide"

    [policy]
    mode = "enforce"

``[prompts]`` and ``[resources]`` hold ``include``/``exclude`` lists in the
same pattern syntax, matched over ``(server_id, prompt name)`` and
``(server_id, resource URI or URI template)``; annotation patterns are refused
there (prompts and resources carry no tool hints). How the Policy combines them
with the tools' verdicts is in :meth:`toolfilter_fast.Policy.select_prompts`.

``[[rename]]`` entries (``server``, ``tool``, and a new ``name``, a
``description`` or both) change how a tool is shown, never how it is judged:
:mod:`toolfilter_fast.renames`.

``[pinning]`` names a lock file (``lock``, a path relative to the config
file's directory; ``toolfilter pin`` writes it) and what happens to a tool
it does not know (``on_new``) or whose definition changed (``on_changed``):
``"hide"`` (the default of both) or ``"show"``; ``fields`` lists the pinned
fields compared (default all five). The lock is read when the
config is loaded: :mod:`toolfilter_fast.pinning`.

``[policy]`` holds ``mode``: ``"enforce"`` (the default) or ``"audit"`` (a
gateway logs what the policy would hide and hides nothing).

``include`` and ``exclude`` may also stand at the top level instead of under
``[filter]`` (not both). A pattern entry is one of:

* a string: a ``server/tool`` glob, exactly as in ``ToolFilter.compile`` (a
  string is *always* a glob, whatever it looks like);
* ``{server = GLOB, regex = RE, flags = LETTERS}``: a regex searched in the
  tool name; ``server`` defaults to ``"*"``, ``flags`` (default none) are
  letters of ``a`` (ASCII), ``i`` (ignore case), ``m`` (multi-line), ``s``
  (dot matches newline), ``x`` (verbose);
* ``{annotations = {readOnlyHint = true}, trusted = ["github"]}``: an
  annotation pattern (:class:`~toolfilter_fast.Annotations`): the tool's
  effective MCP hints must equal each one given; ``trusted`` (default
  ``["*"]``) names the servers whose hints are believed;
* ``{cel = "tool.annotations.readOnlyHint", trusted = [...], max_cost = 100000}``:
  an expression pattern in the Common Expression Language
  (:class:`~toolfilter_fast.Cel`); ``max_cost`` (default 100,000) is its cost
  budget, in comprehension body runs per evaluation;
* ``{callable = "package.module:function"}``: a function pattern
  ``fn(tool, ctx) -> bool``, imported when the file is loaded (a dotted name
  after the colon reaches an attribute: ``"pkg.mod:Policy.check"``). The
  module is looked for in the config file's directory, then in the working
  directory, then on ``sys.path``; those two directories are searched only
  while that import runs. Loading such a file runs the module's code: treat
  a config file with callables as code.

Every key is checked: an unknown key anywhere is an error, because a typo such
as ``exlude`` would otherwise silently show every tool. Errors are
:class:`ConfigError` (a :class:`~toolfilter_fast.PatternError`, so a
``ValueError``) and name the file, the option, the index and the entry:
``filters.toml: filter.exclude[2]: unknown regex flag 'q': {"regex": "x", "flags": "q"}``.

A ``.json`` file is read as JSON, a ``.toml`` file as TOML; any other name is
read as JSON when its first non-blank character is ``{``, else as TOML.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import PatternError
from ._tool import HINTS
from .filter import ToolFilter
from .filter.entries import Annotations, Cel
from .filter.tool_filter import CONFIG_READERS
from .focus import FocusLens
from .focus.common import MODES as FOCUS_LENS_MODES
from .focus.common import check_id as check_focus_id
from .groups import GroupFilter, ToolFilterGroup
from .groups.model import GroupConfigError, GroupFilterBase, _group_from_mapping
from .groups.model import _Where as _GroupWhere
from .pinning import ACTIONS as PINNING_ACTIONS
from .pinning import LockError, Pinning
from .relevance.options import FIELDS as RELEVANCE_FIELDS
from .relevance.options import Relevance
from .renames import RenameError, Renames

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]

__all__ = [
    "FOCUS_LENS_MODES",
    "Config",
    "ConfigError",
    "filter_from_config",
    "filter_from_file",
    "load_config",
    "load_file",
    "parse_toml",
    "read_file",
]

TOP_LEVEL_KEYS = ("filter", "include", "exclude", "relevance", "tool_filter_groups", "focus_lens",
                  "budget", "prompts", "resources", "rename", "pinning", "policy")
RELEVANCE_KEYS = ("top_k", "weights", "k1", "server_k1", "b", "server_evidence", "synonyms",
                  "path_words", "steps", "scorer", "scorer_weight")
BUDGET_KEYS = ("max_tools",)
FILTER_KEYS = ("include", "exclude")
FOCUS_LENS_KEYS = ("mode", "max_tools", "session_id", "focused_id", "hover_id")
PINNING_KEYS = ("lock", "on_new", "on_changed", "fields")
POLICY_KEYS = ("mode",)
#: What a gateway does with a policy's decisions: apply them, or only log them.
POLICY_MODES = ("enforce", "audit")
_FLAGS = {"a": re.ASCII, "i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


class ConfigError(PatternError):
    """A configuration was refused.

    ``path`` is the file (None for a mapping), ``option`` the key as written
    (``"filter.exclude"``, ``"focus_lens.max_tools"``), ``index`` the position
    in a list (or None) and ``entry`` the offending value.
    """

    def __init__(
        self, message: str, *, path: str | None = None, option: str | None = None,
        index: int | None = None, entry: Any = None,
    ) -> None:
        prefix = f"{path}: " if path is not None else ""
        super().__init__(prefix + message, option=option, index=index, entry=entry)
        self.path = path


def _show(entry: Any) -> str:
    """An entry as it would be written in a JSON config (repr when not JSON)."""
    try:
        return json.dumps(entry, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(entry)


class _Where:
    """Where in which file: builds the errors."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    def error(self, option: str, reason: str, *, index: int | None = None,
              entry: Any = None, show_entry: bool = True) -> ConfigError:
        where = option if index is None else f"{option}[{index}]"
        tail = f": {_show(entry)}" if show_entry else ""
        return ConfigError(f"{where}: {reason}{tail}", path=self.path, option=option,
                           index=index, entry=entry)


def _type_name(value: Any) -> str:
    return {dict: "table", list: "array", str: "string", bool: "boolean", int: "integer",
            float: "number", type(None): "null"}.get(type(value), type(value).__name__)


def _search_dirs(where: _Where) -> list[str]:
    """Where a config's callables are looked for before ``sys.path``: the config
    file's own directory, then the working directory (a mapping: the latter only)."""
    dirs = [] if where.path is None else [os.path.dirname(os.path.abspath(where.path))]
    cwd = os.getcwd()
    return [*dirs, cwd] if cwd not in dirs else dirs


@contextlib.contextmanager
def _importing_from(dirs: list[str]) -> Iterator[None]:
    """``dirs`` first on ``sys.path`` while one import runs, and off it after: a
    user's directory is searched only for the callables a config names, never
    for the modules the package itself imports later."""
    sys.path[:0] = dirs
    try:
        yield
    finally:
        # Only the entries put there: whatever the imported module added stays.
        for folder in dirs:
            with contextlib.suppress(ValueError):
                sys.path.remove(folder)


def _import_callable(where: _Where, option: str, index: int | None, entry: Any, spec: Any) -> Any:
    def fail(reason: str) -> ConfigError:
        return where.error(option, reason, index=index, entry=entry)

    if not isinstance(spec, str):
        raise fail(f"'callable' must be a string 'package.module:function', not {_type_name(spec)}")
    module_name, colon, attr_path = spec.partition(":")
    if not colon or not module_name or not attr_path:
        raise fail("'callable' must look like 'package.module:function'")
    dirs = _search_dirs(where)
    try:
        with _importing_from(dirs):
            target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        looked = ", ".join(dirs)
        raise fail(f"cannot import module {module_name!r} ({err}; looked in {looked}, "
                   "then sys.path)") from None
    except Exception as err:
        raise fail(f"importing {module_name!r} raised {type(err).__name__}: {err}") from None
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise fail(f"{module_name!r} has no attribute {attr_path!r}") from None
    if not callable(target):
        raise fail(f"{spec!r} is a {type(target).__name__}, not a function")
    return target


#: The keys that make a pattern table one kind or another: exactly one of them.
_KINDS = ("regex", "callable", "annotations", "cel")


def _trusted(where: _Where, option: str, index: int, entry: dict[str, Any]) -> list[str]:
    trusted = entry.get("trusted", ["*"])
    if not isinstance(trusted, list):
        raise where.error(option, f"'trusted' must be an array of server globs, not "
                          f"{_type_name(trusted)}", index=index, entry=entry)
    for glob in trusted:
        if not isinstance(glob, str) or glob == "" or "/" in glob or ":" in glob:
            raise where.error(option, f"'trusted' holds {_show(glob)}, which is not a server "
                              "glob (a non-empty string without '/' or ':')",
                              index=index, entry=entry)
    return trusted


def _entry_pattern(where: _Where, option: str, index: int, entry: dict[str, Any]) -> Any:
    """An ``{annotations = ...}`` or ``{cel = ...}`` table as its pattern."""
    kind = "annotations" if "annotations" in entry else "cel"
    keys = {kind, "trusted", "max_cost"} if kind == "cel" else {kind, "trusted"}
    extra = sorted(set(entry) - keys)
    if extra:
        named = ("'cel', 'trusted' and 'max_cost'" if kind == "cel"
                 else "'annotations' and 'trusted'")
        raise where.error(option, f"unknown key {extra[0]!r} in {'an' if kind[0] == 'a' else 'a'} "
                          f"{kind} pattern (the keys are {named})",
                          index=index, entry=entry)
    trusted = _trusted(where, option, index, entry)
    value = entry[kind]
    if kind == "cel":
        if not isinstance(value, str):
            raise where.error(option, f"'cel' must be a string, not {_type_name(value)}",
                              index=index, entry=entry)
        max_cost = entry.get("max_cost")
        if "max_cost" in entry and (type(max_cost) is not int or not 0 < max_cost < 1 << 64):
            raise where.error(option, "'max_cost' must be a positive integer (comprehension "
                              f"body runs per evaluation), not {_show(max_cost)}",
                              index=index, entry=entry)
        return Cel(value, trusted=trusted, max_cost=max_cost)
    if not isinstance(value, dict) or not value:
        raise where.error(option, "'annotations' must be a table of hints, e.g. "
                          "{readOnlyHint = true}", index=index, entry=entry)
    for key, hint in value.items():
        if key not in HINTS:
            raise where.error(option, f"unknown hint 'annotations.{key}' (the hints are "
                              f"{', '.join(HINTS)})", index=index, entry=entry)
        if not isinstance(hint, bool):
            raise where.error(option, f"'annotations.{key}' must be true or false, not "
                              f"{_type_name(hint)}", index=index, entry=entry)
    return Annotations(trusted=trusted, **value)


def _pattern(where: _Where, option: str, index: int, entry: Any) -> Any:
    """A config entry turned into what ``ToolFilter.compile`` takes."""
    if isinstance(entry, str):
        return entry
    if not isinstance(entry, dict):
        raise where.error(
            option,
            "a pattern is a string or a {regex = ...}, {callable = ...}, {annotations = ...} "
            f"or {{cel = ...}} table, not {_type_name(entry)}",
            index=index, entry=entry,
        )
    kinds = [kind for kind in _KINDS if kind in entry]
    if len(kinds) > 1:
        raise where.error(option, f"a pattern table has one of {', '.join(map(repr, _KINDS))}, "
                          f"not {kinds[0]!r} and {kinds[1]!r}", index=index, entry=entry)
    if kinds and kinds[0] in ("annotations", "cel"):
        return _entry_pattern(where, option, index, entry)
    if "callable" in entry:
        extra = sorted(set(entry) - {"callable"})
        if extra:
            raise where.error(option, f"unknown key {extra[0]!r} in a callable pattern "
                              "(the only key is 'callable')", index=index, entry=entry)
        return _import_callable(where, option, index, entry, entry["callable"])
    if "regex" not in entry:
        raise where.error(option, "a pattern table needs a 'regex', 'callable', 'annotations' "
                          "or 'cel' key", index=index, entry=entry)
    extra = sorted(set(entry) - {"server", "regex", "flags"})
    if extra:
        raise where.error(option, f"unknown key {extra[0]!r} in a regex pattern "
                          "(the keys are 'server', 'regex' and 'flags')", index=index, entry=entry)
    server, regex, letters = entry.get("server", "*"), entry["regex"], entry.get("flags", "")
    for key, value in (("server", server), ("regex", regex), ("flags", letters)):
        if not isinstance(value, str):
            raise where.error(option, f"{key!r} must be a string, not {_type_name(value)}",
                              index=index, entry=entry)
    flags = 0
    for letter in letters:
        if letter not in _FLAGS:
            raise where.error(option, f"unknown regex flag {letter!r} (the flags are "
                              f"{', '.join(_FLAGS)})", index=index, entry=entry)
        flags |= _FLAGS[letter]
    try:
        compiled = re.compile(regex, flags)
    except re.error as err:
        raise where.error(option, f"invalid regex ({err})", index=index, entry=entry) from None
    except ValueError as err:  # flags that cannot go together, such as a with a str default
        raise where.error(option, f"invalid regex flags ({err})", index=index,
                          entry=entry) from None
    return (server, compiled)


def _patterns(where: _Where, option: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise where.error(option, f"expected an array of patterns, not {_type_name(value)}",
                          entry=value)
    return [_pattern(where, option, index, entry) for index, entry in enumerate(value)]


def _reason(err: PatternError) -> str:
    """The reason part of a compile error ``option[index]: reason: entry``."""
    text = str(err)
    prefix = f"{err.option}[{err.index}]: "
    suffix = f": {err.entry!r}"
    if text.startswith(prefix) and text.endswith(suffix):
        return text[len(prefix):len(text) - len(suffix)]
    return text


def _filter_section(where: _Where, config: Mapping[str, Any], cls: type[ToolFilter]) -> ToolFilter:
    section: Mapping[str, Any] = config
    prefix = ""
    if "filter" in config:
        top = [key for key in FILTER_KEYS if key in config]
        if top:
            raise where.error(top[0], "include/exclude go either under [filter] or at the "
                              "top level, not both", show_entry=False)
        section = config["filter"]
        prefix = "filter."
        if not isinstance(section, dict):
            raise where.error("filter", f"expected a table, not {_type_name(section)}",
                              entry=section)
        for key in section:
            if key not in FILTER_KEYS:
                raise where.error(f"filter.{key}", "unknown key (the keys of [filter] are "
                                  "'include' and 'exclude')", show_entry=False)
    sources = {key: section.get(key, []) for key in FILTER_KEYS}
    return _compile_sides(where, prefix, sources, cls, "filter")


def _compile_sides(where: _Where, prefix: str, sources: dict[str, Any], cls: type[ToolFilter],
                   default: str) -> ToolFilter:
    """The ``include``/``exclude`` lists of a section compiled, a compile error
    named as written (``prefix`` + the option, the index, the entry)."""
    patterns = {key: _patterns(where, prefix + key, value) for key, value in sources.items()}
    try:
        return cls.compile(**patterns)
    except PatternError as err:
        option = err.option or default
        if err.index is None:
            raise where.error(prefix + option, str(err), show_entry=False) from None
        entry = sources[option][err.index] if option in sources else err.entry
        raise where.error(prefix + option, _reason(err), index=err.index, entry=entry) from None


def _extra_section(where: _Where, option: str, value: Any, cls: type[ToolFilter]) -> ToolFilter:
    """``[prompts]`` or ``[resources]``: include/exclude patterns over
    ``(server_id, prompt name)`` or ``(server_id, URI)``, compiled as ``[filter]``
    is; an annotation pattern is refused (there are no tool hints to read)."""
    sources = {key: item for _, key, item in _table_items(where, option, value, FILTER_KEYS)}
    for key, entries in sources.items():
        for index, entry in enumerate(entries if isinstance(entries, list) else ()):
            if isinstance(entry, dict) and "annotations" in entry:
                raise where.error(f"{option}.{key}", f"a {option[:-1]} has no tool annotations: "
                                  "annotation patterns belong in [filter]", index=index,
                                  entry=entry)
    return _compile_sides(where, f"{option}.", sources, cls, "include")


def _string_list(where: _Where, option: str, value: Any) -> list[str]:
    if not isinstance(value, list):
        raise where.error(option, f"expected an array of strings, not {_type_name(value)}",
                          entry=value)
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise where.error(option, f"expected a string, not {_type_name(item)}",
                              index=index, entry=item)
    return list(value)


def _groups_section(where: _Where, value: Any, group_cls: type[GroupFilterBase]) -> GroupFilterBase:
    """``[[tool_filter_groups]]``: each entry read as ``ToolFilterGroup.from_dict`` does
    (unknown keys warn, as upstream ignores them), compiled into one GroupFilter."""
    option = "tool_filter_groups"
    if not isinstance(value, list):
        raise where.error(option, f"expected an array of tables, not {_type_name(value)}",
                          entry=value)
    groups = []
    for index, entry in enumerate(value):
        at = f"{option}[{index}]"
        try:
            groups.append(_group_from_mapping(entry, _GroupWhere(at, None, index)))
        except GroupConfigError as err:
            raise ConfigError(
                str(err), path=where.path, option=f"{at}.{err.field}" if err.field else at,
                index=index, entry=entry,
            ) from None
    return group_cls(groups)


def _budget_section(where: _Where, value: Any) -> dict[str, Any]:
    """``[budget]``: ``max_tools``, the most tools a turn shows."""
    option = "budget"
    if not isinstance(value, dict):
        raise where.error(option, f"expected a table, not {_type_name(value)}", entry=value)
    for key, item in value.items():
        if key not in BUDGET_KEYS:
            raise where.error(f"{option}.{key}", "unknown key (the key of [budget] is "
                              "'max_tools')", show_entry=False)
        if type(item) is not int or item < 0:
            raise where.error(f"{option}.{key}", "expected an integer >= 0", entry=item)
    return dict(value)


def _table_items(where: _Where, option: str, value: Any,
                 keys: tuple[str, ...]) -> Iterator[tuple[str, str, Any]]:
    """``(option.key, key, item)`` for each entry of a section that must be a
    table of ``keys`` (an error for anything else, or an unknown key)."""
    if not isinstance(value, dict):
        raise where.error(option, f"expected a table, not {_type_name(value)}", entry=value)
    for key, item in value.items():
        at = f"{option}.{key}"
        if key not in keys:
            raise where.error(at, f"unknown key (the keys are {', '.join(map(repr, keys))})",
                              show_entry=False)
        yield at, key, item


def _focus_lens_section(where: _Where, value: Any) -> dict[str, Any]:
    """``[focus_lens]``: defaults for :meth:`FocusLens.filter`, each checked by the
    focus lens's own rules (``session_id`` may be left to the call)."""
    for at, key, item in _table_items(where, "focus_lens", value, FOCUS_LENS_KEYS):
        if key == "mode" and item not in FOCUS_LENS_MODES:
            raise where.error(at, f"unknown mode (the modes are "
                              f"{', '.join(map(repr, FOCUS_LENS_MODES))})", entry=item)
        if key == "max_tools" and (type(item) is not int or item < 0):
            raise where.error(at, "expected an integer >= 0", entry=item)
        if key.endswith("_id"):
            try:
                check_focus_id(key, item)
            except ValueError:
                raise where.error(at, "expected a non-empty string without '.'",
                                  entry=item) from None
    return dict(value)


def _relevance_section(where: _Where, value: Any) -> Relevance:
    """``[relevance]``: the Policy's relevance stage (``top_k`` and the ranking's
    weights), a ``scorer`` named as ``"package.module:function"``."""
    option = "relevance"
    for at, key, item in _table_items(where, option, value, RELEVANCE_KEYS):
        if key == "top_k" and (type(item) is not int or item < 0):
            raise where.error(at, "expected an integer >= 0", entry=item)
        if key == "weights":
            if not isinstance(item, dict):
                raise where.error(at, f"expected a table, not {_type_name(item)}", entry=item)
            for field_name, weight in item.items():
                if field_name not in RELEVANCE_FIELDS:
                    raise where.error(f"{at}.{field_name}", "unknown field (the fields are "
                                      f"{', '.join(map(repr, RELEVANCE_FIELDS))})",
                                      show_entry=False)
                if isinstance(weight, bool) or not isinstance(weight, (int, float)):
                    raise where.error(f"{at}.{field_name}", "expected a number", entry=weight)
        if key in ("k1", "server_k1", "b", "server_evidence", "synonyms", "scorer_weight") and (
                isinstance(item, bool) or not isinstance(item, (int, float))):
            raise where.error(at, "expected a number", entry=item)
        if key in ("path_words", "steps") and not isinstance(item, bool):
            raise where.error(at, "expected true or false", entry=item)
    options = dict(value)
    if "scorer" in options:
        options["scorer"] = _import_callable(where, f"{option}.scorer", None, options["scorer"],
                                             options["scorer"])
    try:
        return Relevance.from_mapping(options)
    except (TypeError, ValueError) as err:
        raise where.error(option, str(err), show_entry=False) from None


def _rename_section(where: _Where, value: Any) -> Renames:
    """``[[rename]]``: per-tool names and descriptions shown to clients."""
    if not isinstance(value, list):
        raise where.error("rename", f"expected an array of tables, not {_type_name(value)}",
                          entry=value)
    try:
        return Renames(value)
    except RenameError as err:
        raise where.error("rename", err.reason, index=err.index,
                          entry=value[err.index]) from None


def _pinning_section(where: _Where, value: Any) -> Pinning:
    """``[pinning]``: the lock file (relative to the config file's directory)
    and ``on_new``/``on_changed``, each ``"hide"`` or ``"show"``."""
    options: dict[str, Any] = {}
    for at, key, item in _table_items(where, "pinning", value, PINNING_KEYS):
        if key == "fields":
            options[key] = _string_list(where, at, item)
            continue
        if not isinstance(item, str) or item == "":
            raise where.error(at, "expected a non-empty string", entry=item)
        if key != "lock" and item not in PINNING_ACTIONS:
            raise where.error(at, "expected 'hide' or 'show'", entry=item)
        options[key] = item
    if "lock" not in options:
        raise where.error("pinning.lock", "the lock file is needed (toolfilter pin writes "
                          "one)", show_entry=False)
    lock = options.pop("lock")
    base = os.getcwd() if where.path is None else os.path.dirname(os.path.abspath(where.path))
    try:
        return Pinning(os.path.join(base, lock), **options)
    except LockError as err:
        raise where.error("pinning.lock", str(err), show_entry=False) from None
    except ValueError as err:  # the fields
        raise where.error("pinning.fields", str(err), show_entry=False) from None


def _policy_section(where: _Where, value: Any) -> str:
    """``[policy]``: ``mode``, ``"enforce"`` or ``"audit"``."""
    mode = "enforce"
    for at, _, item in _table_items(where, "policy", value, POLICY_KEYS):
        if item not in POLICY_MODES or not isinstance(item, str):
            raise where.error(at, "expected 'enforce' or 'audit'", entry=item)
        mode = item
    return mode


@dataclass(frozen=True)
class Config:
    """A whole config file: the filter, the tool groups, the focus-lens defaults
    and the budget.

    ``group_filter`` is the ``[[tool_filter_groups]]`` compiled (a
    :class:`~toolfilter_fast.GroupFilter`; with no groups it filters nothing);
    ``focus_lens`` the ``[focus_lens]`` table as written (empty when absent):
    defaults for :meth:`focus`, which runs :meth:`FocusLens.filter` with them;
    ``budget`` the ``[budget]`` table (``max_tools``), empty when absent;
    ``relevance`` the ``[relevance]`` stage's options, None when absent;
    ``prompts`` and ``resources`` the ``[prompts]`` and ``[resources]`` filters
    (None when absent: nothing beyond the tools' verdicts hides them);
    ``renames`` the ``[[rename]]`` entries (empty when absent);
    ``pinning`` the ``[pinning]`` stage (None when absent); ``mode`` the
    ``[policy]`` mode (``"enforce"`` when absent).
    :class:`~toolfilter_fast.Policy` puts them together.
    """

    filter: ToolFilter
    group_filter: GroupFilterBase = field(default_factory=GroupFilter)
    focus_lens: dict[str, Any] = field(default_factory=dict)
    path: str | None = None
    budget: dict[str, Any] = field(default_factory=dict)
    relevance: Relevance | None = None
    prompts: ToolFilter | None = None
    resources: ToolFilter | None = None
    renames: Renames = field(default_factory=Renames)
    pinning: Pinning | None = None
    mode: str = "enforce"

    @property
    def groups(self) -> tuple[ToolFilterGroup, ...]:
        """The tool groups, in file order."""
        return self.group_filter.groups

    def focus(self, tools: Iterable[Any], **options: Any) -> list[Any]:
        """:meth:`FocusLens.filter` with the ``[focus_lens]`` defaults; ``options``
        (``session_id=``, ``focused_id=``, ``registry=``, ...) override them."""
        return FocusLens.filter(tools, **{**self.focus_lens, **options})


def load_config(
    config: Mapping[str, Any], *, path: str | os.PathLike[str] | None = None,
    cls: type[ToolFilter] = ToolFilter, group_cls: type[GroupFilterBase] = GroupFilter,
) -> Config:
    """Validates a parsed config (every section) and builds its parts (with
    ``cls`` and ``group_cls``: the reference passes its own).

    ``path`` only names the source in error messages.
    """
    where = _Where(None if path is None else os.fspath(path))
    if not isinstance(config, Mapping):
        raise where.error("config", f"expected a table (a JSON object), not "
                          f"{_type_name(config)}", show_entry=False)
    for key in config:
        if key not in TOP_LEVEL_KEYS:
            raise where.error(str(key), "unknown top-level key (the keys are "
                              f"{', '.join(map(repr, TOP_LEVEL_KEYS))})", show_entry=False)
    tool_filter = _filter_section(where, config, cls)
    groups = _groups_section(where, config["tool_filter_groups"], group_cls) \
        if "tool_filter_groups" in config else group_cls()
    focus_lens = _focus_lens_section(where, config["focus_lens"]) \
        if "focus_lens" in config else {}
    budget = _budget_section(where, config["budget"]) if "budget" in config else {}
    relevance = _relevance_section(where, config["relevance"]) if "relevance" in config else None
    prompts, resources = (
        _extra_section(where, key, config[key], cls) if key in config else None
        for key in ("prompts", "resources"))
    renames = _rename_section(where, config["rename"]) if "rename" in config else Renames()
    pinning = _pinning_section(where, config["pinning"]) if "pinning" in config else None
    mode = _policy_section(where, config["policy"]) if "policy" in config else "enforce"
    return Config(tool_filter, groups, focus_lens, where.path, budget, relevance, prompts,
                  resources, renames, pinning, mode)


def parse_toml(text: str) -> dict[str, Any]:
    """TOML text to a dict (``tomllib``, or ``tomli`` before Python 3.11)."""
    return tomllib.loads(text)


def read_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parses a TOML or JSON config file into a dict (ConfigError when it cannot)."""
    name = os.fspath(path)
    where = _Where(name)
    try:
        data = Path(name).read_bytes()
    except FileNotFoundError:
        raise ConfigError("no such file", path=name) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, not a config file", path=name) from None
    except OSError as err:
        raise ConfigError(f"cannot read ({err.strerror or err})", path=name) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ConfigError(f"not UTF-8 text ({err.reason} at byte {err.start})",
                          path=name) from None
    suffix = Path(name).suffix.lower()
    as_json = suffix == ".json" or (suffix != ".toml" and text.lstrip().startswith("{"))
    try:
        parsed = json.loads(text) if as_json else parse_toml(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"invalid JSON: {err.msg} (line {err.lineno}, column {err.colno})",
                          path=name) from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"invalid TOML: {err}", path=name) from None
    except RecursionError:
        raise ConfigError("nested too deeply", path=name) from None
    if not isinstance(parsed, dict):
        raise where.error("config", f"expected a JSON object at the top, not "
                          f"{_type_name(parsed)}", show_entry=False)
    return parsed


def load_file(
    path: str | os.PathLike[str], *, cls: type[ToolFilter] = ToolFilter,
    group_cls: type[GroupFilterBase] = GroupFilter,
) -> Config:
    """Reads and validates a whole config file."""
    return load_config(read_file(path), path=path, cls=cls, group_cls=group_cls)


def filter_from_config(
    config: Mapping[str, Any], *, cls: type[ToolFilter] = ToolFilter,
) -> ToolFilter:
    """``ToolFilter.from_config``: the filter of a parsed config (every section is validated)."""
    return load_config(config, cls=cls).filter


def filter_from_file(
    path: str | os.PathLike[str], *, cls: type[ToolFilter] = ToolFilter,
) -> ToolFilter:
    """``ToolFilter.from_file``: the filter of a TOML or JSON config file."""
    return load_file(path, cls=cls).filter


# ToolFilter.from_config and ToolFilter.from_file read configs through these.
CONFIG_READERS.update(config=filter_from_config, file=filter_from_file)
