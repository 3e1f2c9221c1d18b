"""``[[rename]]``: per-tool names and descriptions in the policy file, and the
Policy API that exposes them (``Policy.renames``)."""

from __future__ import annotations

import pickle

import pytest

import toolfilter_fast
from toolfilter_fast import ConfigError, Policy, Tool, reference
from toolfilter_fast.renames import Rename, Renames

RENAMES = """\
[filter]
exclude = ["github/delete_*"]

[[rename]]
server = "github"
tool = "create_issue"
name = "new_issue"
description = "Opens an issue."

[[rename]]
server = "github"
tool = "list_issues"
description = "Lists the issues."
"""


def test_the_file_section_is_read(tmp_path, impl):
    path = tmp_path / "policy.toml"
    path.write_text(RENAMES)
    policy = impl.Policy.from_file(path)
    renames = policy.renames
    assert isinstance(renames, Renames) and len(renames) == 2
    assert renames[("github", "create_issue")] == Rename("github", "create_issue", "new_issue",
                                                         "Opens an issue.")
    assert renames.name("github", "create_issue") == "new_issue"
    assert renames.name("github", "list_issues") == "list_issues"     # a description only
    assert renames.name("gitlab", "create_issue") == "create_issue"   # another server
    assert renames.description("github", "list_issues", "old") == "Lists the issues."
    assert renames.description("github", "get_issue", "its own") == "its own"
    # Mapped back: the new name to the server's own; the old one is gone.
    assert renames.original("github", "new_issue") == "create_issue"
    assert renames.original("github", "create_issue") is None
    assert renames.original("github", "list_issues") == "list_issues"
    assert renames.original("gitlab", "create_issue") == "create_issue"


def test_the_policy_judges_the_servers_own_names(impl):
    policy = impl.Policy.from_config({"filter": {"include": ["github/create_issue"]},
                                      "rename": [{"server": "github", "tool": "create_issue",
                                                  "name": "new_issue"}]})
    tools = [Tool("github", "create_issue"), Tool("github", "new_issue")]
    assert [tool.name for tool in policy.select(tools).tools] == ["create_issue"]


def test_a_swap_is_no_collision():
    renames = Renames([{"server": "s", "tool": "a", "name": "b"},
                       {"server": "s", "tool": "b", "name": "a"}])
    assert (renames.original("s", "a"), renames.original("s", "b")) == ("b", "a")


@pytest.mark.parametrize(("entries", "message"), [
    ([{"server": "s", "tool": "a", "name": "x"}, {"server": "s", "tool": "b", "name": "x"}],
     r"rename\[1\]: tools 'a' and 'b' of server 's' would both be named 'x'"),
    ([{"server": "s", "tool": "a", "name": "x"}, {"server": "s", "tool": "a", "name": "y"}],
     r"rename\[1\]: tool 'a' of server 's' is renamed twice"),
    ([{"server": "s", "tool": "b", "description": "kept"}, {"server": "s", "tool": "a",
                                                            "name": "b"}],
     r"rename\[1\]: tools 'b' and 'a' of server 's' would both be named 'b'"),
    ([{"server": "s", "tool": "a"}], r"rename\[0\]: give a new 'name', a 'description', or both"),
    ([{"server": "s", "tool": "a", "name": ""}], r"rename\[0\]: 'name' must not be empty"),
    ([{"server": "s", "tool": "a", "name": 3}], r"rename\[0\]: 'name' must be a string, not int"),
    ([{"server": "s", "name": "x"}], r"rename\[0\]: 'tool' is required"),
    ([{"server": "s", "tool": "a", "name": "x", "title": "t"}],
     r"rename\[0\]: unknown key 'title'"),
    ([{"server": "s", "tool": "a", "name": "x\ud800"}], r"rename\[0\]: 'name' holds a lone surrogate"),
    ("github", r"rename: expected an array of tables, not string"),
])
def test_a_bad_rename_is_a_config_error_naming_it(entries, message, impl):
    with pytest.raises(ConfigError, match=message):
        impl.Policy.from_config({"rename": entries}, path="policy.toml")


def test_the_config_error_names_the_file(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('[[rename]]\nserver = "s"\ntool = "a"\nname = "x"\n\n'
                    '[[rename]]\nserver = "s"\ntool = "b"\nname = "x"\n')
    with pytest.raises(ConfigError) as raised:
        Policy.from_file(path)
    assert str(raised.value).startswith(f"{path}: rename[1]: tools 'a' and 'b'")
    assert raised.value.option == "rename" and raised.value.index == 1


def test_renames_of_two_servers_to_one_name_are_found():
    renames = Renames([{"server": "a", "tool": "x", "name": "n"},
                       {"server": "b", "tool": "y", "name": "n"},
                       {"server": "c", "tool": "n", "description": "d"}])
    assert [(one.server, other.server) for one, other in renames.clashes_across_servers()] \
        == [("a", "b")]


def test_renames_survive_a_pickle_and_compare_by_value():
    policy = Policy(renames=[{"server": "s", "tool": "a", "name": "b"}])
    copy = pickle.loads(pickle.dumps(policy))
    assert copy.renames == policy.renames
    assert copy.renames.original("s", "b") == "a"
    assert Policy().renames == Renames() and len(Policy().renames) == 0
    assert reference.Policy(renames=policy.renames).renames is policy.renames
    assert toolfilter_fast.Policy(renames=copy.renames).renames.name("s", "a") == "b"
