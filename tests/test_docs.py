"""The README and docs/ cannot rot: every Python and shell block runs with its shown
output compared, every relative link resolves, and the Markdown renders as meant
(no code block swallows a heading, no table loses its delimiter row).
docs/index.md describes the conventions; tests/_doc_blocks.py implements them."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from _doc_blocks import (
    PAGES,
    ROOT,
    Page,
    all_blocks,
    anchors,
    blocks,
    links,
    markdown,
    structure_problems,
    syntax_problem,
)

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

RUN = [b for b in all_blocks() if b.runnable]
NOT_RUN = [b for b in all_blocks() if b.not_run is not None]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    made: dict[Path, Page] = {}

    def get(page):
        if page not in made:
            made[page] = Page(page, tmp_path_factory.mktemp(page.stem))
        return made[page]

    return get


def test_there_are_blocks_to_run():
    assert len(RUN) >= 30
    assert {b.lang for b in RUN} >= {"python", "console"}


@pytest.mark.parametrize("block", RUN, ids=lambda b: b.id)
def test_block_runs_and_shows_what_it_prints(block, pages):
    if block.needs:
        pytest.importorskip(block.needs)  # a framework's adapter: CI installs them all
    pages(block.page).run_through(block)


def test_blocks_not_run_are_few_and_say_why():
    assert len(NOT_RUN) <= 6, [b.id for b in NOT_RUN]
    for b in NOT_RUN:
        assert len(b.not_run) > 20, f"{b.id}: say why the block cannot run in CI"
        assert b.lang in {"python", "console", "sh", "bash"}, f"{b.id}: only code needs the mark"


@pytest.mark.parametrize("block", all_blocks(), ids=lambda b: b.id)
def test_block_parses_in_its_language(block):
    assert syntax_problem(block) is None, syntax_problem(block)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_markdown_renders_as_meant(page):
    assert structure_problems(page) == []


def test_the_structure_check_catches_a_fence_left_open(tmp_path):
    """The defect the README once had: a toml fence closed too late swallowed the
    Python after it, a table and the next section's heading."""
    page = tmp_path / "broken.md"
    page.write_text(
        "# Title\n\n```toml\nmode = \"always\"\n\nfrom x import y\n\n| rule | meaning |\n"
        "| --- | --- |\n| a | b |\n\n## Next section\n\n```python\nprint(1)\n```\n\n"
        "| promise | checked by |\n| a | b |\n",
        encoding="utf-8",
    )
    problems = structure_problems(page)
    assert any("'| --- | --- |'" in p for p in problems)
    assert any("'## Next section'" in p for p in problems)
    assert any("'```python'" in p for p in problems)
    assert any("without its delimiter row" in p for p in problems)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    broken = []
    for line, target in links(page):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc or target.startswith("mailto:"):
            continue
        path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        where = f"{page.relative_to(ROOT)}:{line}: {target}"
        if not path.exists():
            broken.append(f"{where}: no such file")
        elif ROOT not in path.parents and path != ROOT:
            broken.append(f"{where}: outside the repository")
        elif parts.fragment and path.suffix == ".md" and parts.fragment not in anchors(path):
            broken.append(f"{where}: no heading with that anchor")
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_outside_the_repository_is_named(page):
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"\bspec/\w|\.\./shared|/work/", text)


def test_every_docs_page_is_linked_from_the_index():
    index = ROOT / "docs" / "index.md"
    linked = {(index.parent / urlsplit(t).path).resolve() for _, t in links(index)}
    assert [p.name for p in PAGES if p.parent.name == "docs" and p != index
            and p not in linked] == []


def test_every_extra_named_in_an_install_line_exists():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                 ["optional-dependencies"])
    named = {name.strip() for page in PAGES
             for group in re.findall(r"\.\[([\w,-]+)\]", page.read_text(encoding="utf-8"))
             for name in group.split(",")}
    assert named and named <= extras, named - extras


def test_the_readme_starts_with_the_two_commands():
    first = blocks(ROOT / "README.md")[0]
    commands = [line.split("#")[0].strip() for line in first.text.splitlines()]
    assert commands == [
        "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/toolfilter demo",
        "bash .ci/run",
    ]
    # Nothing but the title comes before them.
    assert [t.type for t in markdown().parse((ROOT / "README.md").read_text())][:4] == [
        "heading_open", "inline", "heading_close", "fence"]


def test_the_readme_stays_a_newcomers_page():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").encode()) <= 12_000


CITED = re.compile(r"`((?:tests|benches|rust|python|examples)/[\w./-]+)?(?:::([\w*]+))?`")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_cited_files_and_tests_exist(page):
    """Each `path` and `path::test_name` in code spans names a file and a function in
    it; a bare `::test_name` belongs to the file cited last before it."""
    missing = []
    current = None
    for match in CITED.finditer(page.read_text(encoding="utf-8")):
        path, name = match[1], match[2]
        if path is not None:
            current = ROOT / path
            if not current.exists():
                missing.append(path)
                continue
        if name is None or current is None or not current.is_file():
            continue
        pattern = re.escape(name).replace(r"\*", r"\w*")
        if not re.search(rf"^\s*(?:async\s+)?(?:def|fn)\s+{pattern}\b", current.read_text(),
                         re.M):
            missing.append(f"{current.relative_to(ROOT)}::{name}")
    assert missing == []
