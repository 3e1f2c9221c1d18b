"""The code blocks of the README and docs/, found with a CommonMark parser and run.

docs/index.md tells readers the conventions this module implements:

* a ``python`` (or ``pycon``) block holding ``>>>`` prompts is a doctest: each
  answer shown is compared (``...`` stands for any text, and runs of
  whitespace compare equal); a block without prompts is a script, which must
  run and print nothing;
* a ``console`` block is a shell session: each ``$ `` line (continued by a
  trailing ``\\``) runs in bash, and what it prints, stdout and stderr
  together, is compared with the lines under it (``...`` as above); a command
  must exit 0, so one that fails on purpose shows its status with ``echo``;
* an ``sh`` or ``bash`` block is a script: it must exit 0 and print nothing;
* a block whose info string holds ``file=NAME`` (``python file=policy.py``)
  is written to ``NAME`` for the blocks after it, and not run itself;
  ``toml``, ``json`` and Python blocks must parse either way;
* a block right after a paragraph that starts ``Not run in CI:`` is not run;
  the paragraph says why (for a block that opens its page, the mark is the
  paragraph right after it).

The blocks of one page run in order, in one Python namespace and one
temporary directory, with the running Python's ``bin`` directory first on
``PATH`` (so ``toolfilter`` and ``python`` are the package's). The directory
holds ``examples``, a link to the repository's ``examples/``, so that a page
can use the example files by the paths they have in a checkout.
"""

from __future__ import annotations

import doctest
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from functools import cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

PYTHON = {"python", "pycon", "py"}
SESSION = {"console", "shell-session"}
SCRIPT = {"sh", "bash", "shell"}
RUNNABLE = PYTHON | SESSION | SCRIPT

NOT_RUN = re.compile(r"^[*_]{0,2}Not run in CI:[*_]{0,2}\s*(?P<reason>.*?)[*_]{0,2}$", re.S)
#: What no code block may hold: a Markdown heading (level 2 or more: a single
#: ``#`` is a comment in Python, shell and TOML), a table's delimiter row, or a
#: fence that opens another block (only a bare fence can close one).
SWALLOWED = re.compile(r"^(#{2,6} \S|\|(\s*:?-{3,}:?\s*\|)+\s*$|```+\s*[A-Za-z])")


def name(page: Path) -> str:
    """The page's path in the repository (its own path, for a page outside it)."""
    return str(page.relative_to(ROOT)) if ROOT in page.parents else str(page)


def markdown() -> MarkdownIt:
    """CommonMark with GitHub's tables, as the pages are read on GitHub."""
    return MarkdownIt("commonmark").enable("table")


@cache
def tokens(page: Path) -> list[Token]:
    return markdown().parse(page.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, from 1
    lang: str
    info: str
    text: str
    not_run: str | None  # the reason, for a block marked not to run

    @property
    def id(self) -> str:
        return f"{name(self.page)}:{self.line}"

    @property
    def file(self) -> str | None:
        match = re.search(r"\bfile=(\S+)", self.info)
        return match[1] if match else None

    @property
    def needs(self) -> str | None:
        """The module a block needs (``needs=MODULE``): a framework an adapter hooks."""
        match = re.search(r"\bneeds=(\S+)", self.info)
        return match[1] if match else None

    @property
    def runnable(self) -> bool:
        return self.lang in RUNNABLE and self.not_run is None and self.file is None


def blocks(page: Path) -> list[Block]:
    out = []
    toks = tokens(page)
    for i, tok in enumerate(toks):
        if tok.type != "fence":
            continue
        # The mark is the paragraph right before the block; for a block that
        # opens its page (only the title before it), the paragraph right after.
        if [t.type for t in toks[:i]] == ["heading_open", "inline", "heading_close"]:
            mark = toks[i + 2] if i + 2 < len(toks) and toks[i + 1].type == "paragraph_open" \
                else None
        else:
            mark = toks[i - 2] if i >= 2 and toks[i - 1].type == "paragraph_close" else None
        marked = NOT_RUN.match(mark.content.strip()) if mark is not None else None
        reason = marked["reason"].strip() if marked else None
        info = tok.info.strip()
        assert tok.map is not None
        out.append(Block(page, tok.map[0] + 1, info.split()[0].lower() if info else "", info,
                         tok.content, reason))
    return out


def all_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page)]


# --- checks on the Markdown ----------------------------------------------------------


def structure_problems(page: Path) -> list[str]:
    """Code blocks that swallow Markdown, and tables that lost their delimiter row."""
    problems = []
    for b in blocks(page):
        if b.lang in ("markdown", "md"):
            continue  # a block that shows Markdown may hold any of it
        for offset, line in enumerate(b.text.splitlines(), start=1):
            if SWALLOWED.match(line):
                problems.append(f"{b.id}: the {b.lang or 'plain'} block swallows line "
                                f"{b.line + offset}: {line.strip()!r}")
    for tok in tokens(page):
        if tok.type == "inline" and tok.content.startswith("|") and tok.content.count("|") > 2:
            assert tok.map is not None
            problems.append(f"{name(page)}:{tok.map[0] + 1}: a table without its "
                            "delimiter row renders as a paragraph of pipes")
    return problems


def plain_text(tok: Token) -> str:
    return "".join(child.content for child in tok.children or []
                   if child.type in ("text", "code_inline"))


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings."""
    seen: dict[str, int] = {}
    out = set()
    toks = tokens(page)
    for i, tok in enumerate(toks):
        if tok.type != "heading_open":
            continue
        slug = re.sub(r"[^\w\- ]", "", plain_text(toks[i + 1]).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def links(page: Path) -> list[tuple[int, str]]:
    """``(line, target)`` of every link and image on the page."""
    out = []
    for tok in tokens(page):
        if tok.type != "inline":
            continue
        assert tok.map is not None
        for child in tok.children or []:
            target = child.attrs.get("href") if child.type == "link_open" else (
                child.attrs.get("src") if child.type == "image" else None)
            if isinstance(target, str):
                out.append((tok.map[0] + 1, target))
    return out


def syntax_problem(b: Block) -> str | None:
    """Why the block does not parse in its language, or None."""
    try:
        if b.lang == "toml":
            tomllib.loads(b.text)
        elif b.lang == "json":
            json.loads(b.text)
        elif b.lang in PYTHON:
            if ">>>" in b.text:
                for example in doctest.DocTestParser().get_examples(b.text):
                    compile(example.source, b.id, "single")
            else:
                compile(b.text, b.id, "exec")
        elif b.lang in SCRIPT | SESSION:
            script = b.text if b.lang in SCRIPT else "\n".join(c for c, _ in session(b.text))
            result = subprocess.run(["bash", "-n"], input=script, capture_output=True,
                                    text=True)
            if result.returncode:
                return result.stderr.strip()
    except (SyntaxError, ValueError) as err:  # TOMLDecodeError and JSONDecodeError too
        return f"{type(err).__name__}: {err}"
    return None


# --- running -------------------------------------------------------------------------


def available(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


@contextmanager
def chdir(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def session(text: str) -> list[tuple[str, str]]:
    """The ``(command, expected output)`` pairs of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            command = [line[2:]]
            while command[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                command.append(lines[i])
            pairs.append(("\n".join(command), []))
        elif pairs:
            pairs[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"output before the first '$ ' command: {line!r}")
        i += 1
    return [(command, "\n".join(out)) for command, out in pairs]


CHECKER = doctest.OutputChecker()
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def same_output(want: str, got: str) -> bool:
    def tidy(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.strip("\n").splitlines()) + "\n"

    return CHECKER.check_output(tidy(want), tidy(got), doctest.ELLIPSIS)


class Page:
    """The running state of one page: its namespace, its directory, its next block."""

    def __init__(self, page: Path, directory: Path) -> None:
        self.page = page
        self.directory = directory
        self.namespace: dict[str, object] = {"__name__": "__docs__"}
        # The repository's examples, at the path they have in a checkout.
        (directory / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
        self.done = 0
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("COLUMNS", "NO_COLOR", "FORCE_COLOR", "PYTHONSTARTUP")}
        self.env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{self.env['PATH']}"

    def run_through(self, block: Block) -> None:
        """Runs every block of the page up to and including ``block``, in order."""
        todo = blocks(self.page)
        while self.done < len(todo):
            current = todo[self.done]
            self.done += 1
            self.run(current)
            if current == block:
                return

    def run(self, b: Block) -> None:
        if b.file is not None:
            (self.directory / b.file).write_text(b.text, encoding="utf-8")
        if not b.runnable or (b.needs and not available(b.needs)):
            return
        with chdir(self.directory):
            if b.lang in PYTHON:
                self.python(b)
            elif b.lang in SESSION:
                for command, want in session(b.text):
                    self.shell(b, command, want)
            else:
                self.shell(b, b.text, "", script=True)

    def python(self, b: Block) -> None:
        path = list(sys.path)
        try:
            self._python(b)
        finally:
            sys.path[:] = path

    def _python(self, b: Block) -> None:
        if ">>>" not in b.text:
            out = io.StringIO()
            code = compile("\n" * b.line + b.text, str(b.page), "exec")
            with redirect_stdout(out):
                exec(code, self.namespace)
            if out.getvalue():
                raise AssertionError(f"{b.id}: a script block printed (show output with >>>):\n"
                                     f"{out.getvalue()}")
            return
        test = doctest.DocTestParser().get_doctest(b.text, {}, b.id, str(b.page), b.line)
        test.globs = self.namespace  # the page's namespace, kept from block to block
        report = io.StringIO()
        runner = doctest.DocTestRunner(optionflags=FLAGS)
        runner.run(test, out=report.write, clear_globs=False)
        if runner.failures:
            raise AssertionError(f"{b.id}:\n{report.getvalue()}")

    def shell(self, b: Block, command: str, want: str, script: bool = False) -> None:
        # A script stops at its first failure; a session's command line runs as
        # a reader's shell would run it, so `cmd; echo "exit $?"` shows a status.
        flags = ["-euo", "pipefail"] if script else []
        result = subprocess.run(
            ["bash", *flags, "-c", command], cwd=self.directory, env=self.env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, timeout=600,
        )
        where = f"{b.id}: {'the script' if script else '$ ' + command}"
        if result.returncode:
            raise AssertionError(f"{where}\nexited {result.returncode}:\n{result.stdout}")
        if not same_output(want, result.stdout):
            raise AssertionError(f"{where}\nexpected:\n{want}\ngot:\n{result.stdout}")
