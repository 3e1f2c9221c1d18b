"""The ``toolfilter`` command: try, check and explain filter configs without Python.

Exit codes: 0 done; 1 a ``--expect-visible``/``--expect-hidden`` assertion
failed; 2 a bad flag, a bad config or catalog file (one message on stderr,
never a traceback); 130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import sys
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from .._tool import Tool
from .._version import __version__
from ..config import Config, ConfigError, load_config, load_file, parse_toml
from ..filter.entries import Annotations, Cel
from ..filter.explain import Decision, Explainer, describe_pattern
from ..gateway.servers import ServersError, read_servers
from ..policy import Policy
from ..policy.model import serving_order
from . import demo as _demo
from . import gateway as gateway_cli
from .catalog_files import CatalogError
from .lint import deny_rule, lint
from .options import UsageError
from .options import parse_ctx as _parse_ctx
from .options import read_catalogs as _read_catalogs
from .term import ProgressBar, Style, table, wants_color

__all__ = ["main"]

#: Catalogs bigger than this get a progress bar (on a terminal).
PROGRESS_THRESHOLD = 100_000


def _split_tool(text: str, flag: str) -> tuple[str, str]:
    server, slash, name = text.partition("/")
    if not slash or not server or not name:
        raise UsageError(f"{flag} {text!r}: expected SERVER/TOOL (split at the first '/')")
    return server, name


def _load_config(path: str, command: str) -> Config:
    """The config file; its warnings (unknown keys in a group) printed as one line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = load_file(path)
    for warning in caught:
        print(f"toolfilter {command}: warning: {path}: {warning.message}", file=sys.stderr)
    return config


def _server_order(path: str | None) -> list[str]:
    """``--servers``: the servers file's servers, in its order (read as serve reads it)."""
    if path is None:
        return []
    try:
        return [spec.name for spec in read_servers(path)]
    except ServersError as err:
        raise UsageError(f"--servers {err}") from None


def _explain_all(
    explainer: Explainer, tools: Sequence[Tool], ctx: Any, progress: str,
) -> list[Decision]:
    show = progress == "always" or (
        progress == "auto" and len(tools) > PROGRESS_THRESHOLD and _isatty(sys.stderr)
    )
    bar = ProgressBar(sys.stderr, len(tools), "explaining", show)
    decisions = []
    step = max(1, len(tools) // 200)
    for i, tool in enumerate(tools, start=1):
        decisions.append(explainer.explain(tool, ctx))
        if i % step == 0:
            bar.advance(step)
    bar.advance(len(tools) - bar.done)
    bar.close()
    return decisions


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _tool_label(d: Decision | _PolicyRow) -> str:
    return f"{d.server_id}/{d.name}"


def _status(d: Decision | _PolicyRow) -> tuple[str, tuple[str, ...]]:
    return ("visible", ("green",)) if d.visible else ("hidden", ("red",))


class _PolicyRow:
    """A tool's filter decision, and the policy stage that dropped it if a
    later stage did: shaped like a Decision for the writers."""

    __slots__ = ("decision", "name", "reason", "server_id", "stage", "tool", "visible", "why")

    def __init__(self, decision: Decision, stage: str | None, policy_reason: str,
                 tool: Tool | None = None) -> None:
        self.decision, self.stage, self.tool = decision, stage, tool
        self.server_id, self.name = decision.server_id, decision.name
        if stage is None or stage == "visibility":
            self.visible, self.why, self.reason = decision.visible, decision.why, decision.reason
        else:
            self.visible, self.reason = False, policy_reason
            self.why = f"[{stage}] {policy_reason.removeprefix('hidden: ')}"

    def to_dict(self) -> dict[str, Any]:
        doc = self.decision.to_dict()
        doc.update(visible=self.visible, reason=self.reason, stage=self.stage)
        return doc


def _policy_rows(policy: Policy, tools: Sequence[Tool], decisions: Sequence[Decision], ctx: Any,
                 message: str | None, focus: Any, servers: Sequence[str] = (),
                 ) -> tuple[list[_PolicyRow], tuple[str, ...]]:
    """Each tool's row, in the order given; the policy judges them in the
    gateway's order (:func:`serving_order`), which the budget and the other
    order-dependent stages read."""
    order = serving_order(tools, servers)
    try:
        selection = policy.select([tools[i] for i in order], ctx, message, focus)
    except ValueError as err:
        raise UsageError(f"--focus: {err}") from None
    place = {i: j for j, i in enumerate(order)}
    rows = [_PolicyRow(d, selection.stage_of(place[i]), selection.reason_of(place[i]), tools[i])
            for i, d in enumerate(decisions)]
    return rows, selection.stages


def _write_decisions(
    out: TextIO, decisions: Sequence[Decision] | Sequence[_PolicyRow], fmt: str, style: Style,
    extra: dict[str, Any] | None = None, stages: bool = False,
) -> None:
    if fmt == "mcp":
        # The visible tools as a tools/list result, each definition as it was read.
        kept = [d for d in decisions if d.visible]
        tools = [_definition(d) for d in kept]
        json.dump({"tools": tools}, out, ensure_ascii=False, indent=2)
        out.write("\n")
    elif fmt == "json":
        doc = dict(extra or {})
        doc["summary"] = _summary_counts(decisions)
        doc["tools"] = [d.to_dict() for d in decisions]
        json.dump(doc, out, ensure_ascii=False, indent=2)
        out.write("\n")
    elif fmt == "jsonl":
        for d in decisions:
            out.write(json.dumps(d.to_dict(), ensure_ascii=False))
            out.write("\n")
    elif fmt == "text":
        for d in decisions:
            stage = f"{_stage(d)}\t" if stages else ""
            out.write(f"{'visible' if d.visible else 'hidden'}\t{stage}{_tool_label(d)}\t{d.why}\n")
    else:
        if stages:
            rows = [[_status(d), (_stage(d), ()), (_tool_label(d), ()), (d.why, ())]
                    for d in decisions]
            lines = table(["STATUS", "STAGE", "TOOL", "WHY"], rows, style)
        else:
            rows = [[_status(d), (_tool_label(d), ()), (d.why, ())] for d in decisions]
            lines = table(["STATUS", "TOOL", "WHY"], rows, style)
        for line in lines:
            out.write(line + "\n")
        counts = _summary_counts(decisions)
        out.write(style(
            f"{counts['tools']} tools: {counts['visible']} visible, {counts['hidden']} hidden",
            "bold",
        ) + "\n")


def _definition(d: Decision | _PolicyRow) -> dict[str, Any]:
    tool = d.tool if isinstance(d, _PolicyRow) else None
    return tool.to_mcp() if tool is not None else {"name": d.name}


def _stage(d: Decision | _PolicyRow) -> str:
    """The stage that decided: the one that dropped the tool, or ``kept``."""
    stage = getattr(d, "stage", None)
    if stage is None:
        return "kept" if d.visible else "visibility"
    return str(stage)


def _summary_counts(decisions: Sequence[Decision] | Sequence[_PolicyRow]) -> dict[str, int]:
    visible = sum(d.visible for d in decisions)
    return {"tools": len(decisions), "visible": visible, "hidden": len(decisions) - visible}


def _resolve_format(fmt: str, out: TextIO, piped: str = "text") -> str:
    if fmt == "auto":
        return "table" if _isatty(out) else piped
    return fmt


# --- check ---------------------------------------------------------------------------


def _expectations(args: argparse.Namespace) -> list[tuple[str, str, str, str]]:
    out = []
    for want, flag in (("visible", "--expect-visible"), ("hidden", "--expect-hidden")):
        for text in getattr(args, f"expect_{want}"):
            server, name = _split_tool(text, flag)
            out.append((want, text, server, name))
    return out


def _check_expectations(
    expectations: Iterable[tuple[str, str, str, str]], decisions: Sequence[_PolicyRow],
) -> list[dict[str, Any]]:
    expectations = list(expectations)
    if not expectations:
        return []
    by_tool: dict[tuple[str, str], list[_PolicyRow]] = {}
    for d in decisions:
        by_tool.setdefault((d.server_id, d.name), []).append(d)
    results = []
    for want, text, server, name in expectations:
        found = by_tool.get((server, name), [])
        wrong = [d for d in found if d.visible != (want == "visible")]
        if not found:
            ok, message = False, f"expected {text} {want}, but it is not in the catalog"
        elif wrong:
            d = wrong[0]
            ok, message = False, f"expected {text} {want}, but it is {d.reason}"
        else:
            ok, message = True, f"{text} is {want}: {found[0].why}"
        results.append({"expect": want, "tool": text, "ok": ok, "message": message})
    return results


def _cmd_check(args: argparse.Namespace) -> int:
    expectations = _expectations(args)
    ctx = _parse_ctx(args.ctx)
    config = _load_config(args.config, args.command)
    tools = _read_catalogs(args.catalogs, args.server_id)
    decisions = _explain_all(Explainer(config.filter), tools, ctx, args.progress)
    rows, stages = _policy_rows(Policy.from_parts(config), tools, decisions, ctx, args.message,
                                args.focus, _server_order(args.servers))
    results = _check_expectations(expectations, rows)
    shown = rows
    if args.only != "all":
        shown = [d for d in rows if d.visible == (args.only == "visible")]
    out = sys.stdout
    fmt = _resolve_format(args.format, out)
    extra = {"config": args.config, "ctx": ctx, "message": args.message, "focus": args.focus,
             "stages": list(stages), "expectations": results}
    _write_decisions(out, shown, fmt, Style(wants_color(out, args.color)), extra,
                     stages=len(stages) > 1)
    out.flush()
    err_style = Style(wants_color(sys.stderr, args.color))
    failed = [r for r in results if not r["ok"]]
    for r in failed:
        print(f"{err_style('FAIL', 'red', 'bold')} {r['message']}", file=sys.stderr)
    if results:
        summary = f"expectations: {len(results) - len(failed)} passed, {len(failed)} failed"
        print(err_style(summary, "bold"), file=sys.stderr)
    return 1 if failed else 0


# --- explain -------------------------------------------------------------------------


def _hint_reader(tool_filter: Any) -> str | None:
    """The first pattern that reads a tool's annotations (an annotation
    pattern, or a CEL pattern whose expression names ``annotations``), as
    ``filter.include[0] {annotations = ...}``; None when none does."""
    for option in ("include", "exclude"):
        for index, entry in enumerate(getattr(tool_filter, option)):
            if isinstance(entry, Annotations) or (
                    isinstance(entry, Cel) and "annotations" in entry.source):
                return f"filter.{option}[{index}] {describe_pattern(entry)}"
    return None


def _reads_record(tool_filter: Any) -> bool:
    """Whether a pattern may read more of a tool than its server and name (a
    CEL or function pattern: the description, title, annotations, _meta)."""
    return any(isinstance(entry, Cel) or callable(entry)
               for option in ("include", "exclude") for entry in getattr(tool_filter, option))


def _explain_text(row: _PolicyRow, style: Style, bare: bool = False) -> list[str]:
    d = row.decision
    status = style("visible", "green", "bold") if row.visible else style("hidden", "red", "bold")
    lines = [f"{style(_tool_label(d), 'bold')}: {status}"]

    def field(label: str, value: str) -> None:
        lines.append(f"  {style(f'{label:<9}', 'dim')}{value}")

    field("stage", _stage(row))
    field("why", row.why)
    field("step", f"{d.step} (the filter: {'visible' if d.visible else 'hidden'})")
    p = d.pattern
    if p is not None:
        parts = [p.kind]
        if p.kind == "string":
            parts.append(f"server glob {json.dumps(p.server_glob, ensure_ascii=False)}, "
                         f"tool glob {json.dumps(p.tool_glob, ensure_ascii=False)}")
        if p.kind in ("string", "regex") and p.loose:
            parts.append("loose" + (f", folded {json.dumps(p.folded, ensure_ascii=False)}"
                                    if p.folded is not None else ""))
        elif p.kind in ("string", "regex"):
            parts.append("exact")
        if d.matched_on is not None:
            parts.append(f"matched the {d.matched_on} form")
        field("pattern", f"{p.label()} ({'; '.join(parts)})")
    field("folded", f"server {json.dumps(d.folded_server_id, ensure_ascii=False)}, "
          f"name {json.dumps(d.folded_name, ensure_ascii=False)} (what exclude patterns match)")
    field("refresh", "kept by static_visible (functions decide at read time)"
          if d.static_visible else "dropped by static_visible (never stored by a catalog)")
    if bare:
        field("record", "none (no --catalog): the tool is its server and name alone, without "
              "description, title, annotations or _meta")
    if d.hints is not None and (d.hints or d.effective_hints is not None):
        given = ", ".join(f"{k}={'true' if v else 'false'}" for k, v in d.hints.items())
        field("hints", f"given: {given or 'none'}" + (
            "" if d.trusted is None else
            f"; {'trusted' if d.trusted else 'not trusted (defaults apply)'}"))
    if d.calls:
        for i, call in enumerate(d.calls):
            field("calls" if i == 0 else "", call.describe())
    else:
        field("calls", "none")
    return lines


def _cmd_explain(args: argparse.Namespace) -> int:
    targets = [_split_tool(text, "SERVER/TOOL") for text in args.tools]
    ctx = _parse_ctx(args.ctx)
    config = _load_config(args.config, args.command)
    reader = None if args.catalog else _hint_reader(config.filter)
    if reader is not None:
        # A bare tool has no annotations: every hint would take its default,
        # a verdict about another tool than the one check judges.
        raise UsageError(f"--catalog is needed: {reader} reads the tool's annotations, which "
                         "only its catalog record gives (without it every hint would take its "
                         "MCP default, and explain would judge another tool than check does)")
    known: dict[tuple[str, str], Tool] = {}
    if args.catalog:
        for tool in _read_catalogs(args.catalog, None):
            known.setdefault((tool.server_id, tool.name), tool)
    explainer = Explainer(config.filter)
    policy = Policy.from_parts(config)
    # The focus and budget stages depend on the turn's other tools: the
    # catalogs' tools when given, else the named tools together.
    chosen: list[Tool] = []
    for (server, name), text in zip(targets, args.tools, strict=True):
        found = known.get((server, name))
        if found is None and args.catalog:
            raise UsageError(f"{text!r} is not in the given catalogs")
        chosen.append(found or Tool(server, name))
    turn = list(known.values()) if args.catalog else chosen
    decisions = [explainer.explain(tool, ctx) for tool in turn]
    rows, _ = _policy_rows(policy, turn, decisions, ctx, args.message, args.focus,
                           _server_order(args.servers))
    by_tool = {id(tool): row for tool, row in zip(turn, rows, strict=True)}
    picked = [by_tool[id(tool)] for tool in chosen]
    out = sys.stdout
    if args.format == "json":
        json.dump([{**row.to_dict(), "record": bool(args.catalog)} for row in picked], out,
                  ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        style = Style(wants_color(out, args.color))
        bare = not args.catalog and _reads_record(config.filter)
        blocks = ["\n".join(_explain_text(row, style, bare)) for row in picked]
        out.write("\n\n".join(blocks) + "\n")
    return 0


# --- lint ----------------------------------------------------------------------------


def _cmd_lint(args: argparse.Namespace) -> int:
    deny = []
    for text in args.deny_visible:
        try:
            deny.append((text, deny_rule(text)))
        except ValueError as err:  # PatternError too: a CEL rule that does not compile
            raise UsageError(f"--deny-visible {text!r}: {err}") from None
    ctx = _parse_ctx(args.ctx)
    config = _load_config(args.config, args.command)
    tools = _read_catalogs(args.catalogs, args.server_id)
    try:
        findings = lint(config, tools, ctx=ctx, message=args.message, focus=args.focus, deny=deny,
                        servers=_server_order(args.servers))
    except ValueError as err:
        raise UsageError(f"--focus: {err}") from None
    out = sys.stdout
    denied = [f for f in findings if f.kind == "denied"]
    warnings_ = [f for f in findings if f.kind != "denied"]
    if args.format == "json":
        json.dump({"config": args.config, "tools": len(tools),
                   "findings": [f.to_dict() for f in findings]}, out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        style = Style(wants_color(out, args.color))
        for f in warnings_:
            out.write(f"{style('warning', 'yellow', 'bold')} {f.kind}: {f.where}: {f.message}\n")
            for name in f.tools[:10]:
                out.write(f"    {name}\n")
        for f in denied:
            out.write(f"{style('DENIED', 'red', 'bold')} {f.message}:\n")
            for name in f.tools:
                out.write(f"    {name}\n")
        out.write(style(f"{len(tools)} tools: {_count(len(warnings_), 'warning')}, "
                        f"{_count(len(denied), 'failed assertion')}", "bold") + "\n")
    if denied or (args.strict and warnings_):
        return 1
    return 0


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}{'' if n == 1 else 's'}"


# --- demo ----------------------------------------------------------------------------


def _cmd_demo(args: argparse.Namespace) -> int:
    if args.write_example is not None:
        return _write_example(Path(args.write_example))
    config = load_config(parse_toml(_demo.EXAMPLE_CONFIG), path="<example filters.toml>")
    tools = _demo.example_tools()
    explainer = Explainer(config.filter)
    out = sys.stdout
    style = Style(wants_color(out, args.color))
    fmt = _resolve_format(args.format, out)
    if fmt == "json":
        runs = [{"ctx": ctx, "tools": [explainer.explain(t, ctx).to_dict() for t in tools]}
                for ctx in _demo.EXAMPLE_CONTEXTS]
        json.dump({"config": _demo.EXAMPLE_CONFIG, "runs": runs}, out, ensure_ascii=False,
                  indent=2)
        out.write("\n")
        return 0
    out.write(style("The example config (filters.toml):", "bold") + "\n\n")
    out.write("".join(f"    {line}\n" for line in _demo.EXAMPLE_CONFIG.splitlines()))
    for ctx in _demo.EXAMPLE_CONTEXTS:
        out.write("\n" + style(f"ctx = {json.dumps(ctx)}", "bold") + "\n")
        _write_decisions(out, [explainer.explain(t, ctx) for t in tools], fmt, style)
    out.write(
        "\nTry it on files: toolfilter demo --write-example DIR, then\n"
        "  toolfilter check --config DIR/filters.toml --ctx @DIR/ctx.json DIR/catalog.jsonl\n"
        "  toolfilter explain --config DIR/filters.toml github/Delete-Repo\n"
    )
    return 0


def _write_example(directory: Path) -> int:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "filters.toml").write_text(_demo.EXAMPLE_CONFIG, encoding="utf-8")
        records = [{"server_id": t.server_id, "name": t.name} for t in _demo.example_tools()]
        (directory / "catalog.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8",
        )
        (directory / "ctx.json").write_text(
            json.dumps(_demo.EXAMPLE_CONTEXTS[0]) + "\n", encoding="utf-8",
        )
    except OSError as err:
        raise UsageError(f"--write-example {directory}: {err.strerror or err}") from None
    for name in ("filters.toml", "catalog.jsonl", "ctx.json"):
        print(directory / name)
    return 0


# --- bench ---------------------------------------------------------------------------


def _int_list(text: str, flag: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise UsageError(f"{flag} {text!r}: expected comma-separated whole numbers") from None
    if any(v < 1 for v in values):
        raise UsageError(f"{flag} {text!r}: every number must be at least 1")
    return values


def _bench_steps(sizes: Sequence[int], counts: Sequence[int], memory: bool) -> int:
    """How many progress messages ``bench.runner.run`` sends for these arguments: one
    catalog generation and four timings a size, one a pattern count, then the
    scalar call, the compile, the memory probe and the adversarial glob. Only
    sizes the bar; a miscount would only make it end early or late."""
    return 5 * len(sizes) + len(counts) + 3 + int(memory)


def _cmd_bench(args: argparse.Namespace) -> int:
    # Late: the benchmark, and the modules it takes (platform, statistics,
    # subprocess), load only for `bench`, not for every command.
    from ..bench import runner as _bench

    sizes = _int_list(args.sizes, "--sizes")
    counts = _int_list(args.counts, "--counts")
    show = args.progress == "always" or (args.progress == "auto" and _isatty(sys.stderr))
    bar = ProgressBar(sys.stderr, _bench_steps(sizes, counts, args.memory), "bench", show)

    started = 0

    def say(message: str) -> None:
        # Each message starts a step, so the steps before it are done.
        nonlocal started
        bar.total = max(bar.total, started + 1)
        bar.advance(started - bar.done, message.strip())
        started += 1

    rows, notes = _bench.run(sizes, counts, say=say, memory=args.memory)
    bar.advance(bar.total - bar.done, "done")
    bar.close()
    out = sys.stdout
    fmt = _resolve_format(args.format, out, piped="markdown")
    machine = _bench.machine()
    if fmt == "json":
        doc = {
            "machine": machine, "sizes": sizes, "counts": counts,
            "rows": [{**dataclasses.asdict(r), "ratio": r.ratio, "met": r.met} for r in rows],
            "notes": notes,
        }
        json.dump(doc, out, ensure_ascii=False, indent=2)
        out.write("\n")
        return 0
    markdown = _bench.render(rows, notes)
    if fmt == "markdown":
        out.write(f"Machine: {machine}\n\n{markdown}\n")
        return 0
    style = Style(wants_color(out, args.color))
    lines = markdown.splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    cells = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        row = [cell.strip() for cell in line.strip().strip("|").split("|")]
        cells.append([(c, ("red", "bold") if c in ("NO", "missed") else ("bold",) if i == 5 else ())
                      for i, c in enumerate(row)])
    out.write(style(f"Machine: {machine}", "dim") + "\n\n")
    for line in table(header, cells, style):
        out.write(line + "\n")
    for line in lines[2 + len(cells):]:
        if line:
            out.write(line + "\n")
    return 0


# --- the parser ----------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse with the program's error format: one line, then the usage hint, exit 2."""

    def error(self, message: str) -> Any:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto",
        help="colours: auto (a terminal and NO_COLOR unset), always, never (default: auto)",
    )
    parser = _Parser(
        prog="toolfilter",
        description="Check and explain which MCP tools a filter config shows or hides.",
        epilog="Start with: toolfilter demo. Exit codes: 0 ok, 1 an expectation failed, "
               "2 bad flags or files.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    demo = sub.add_parser(
        "demo", parents=[common], help="show an example config on an example catalog",
        description="Runs an embedded example config on an embedded example catalog for two "
                    "contexts and shows every tool, visible or hidden, with the reason.",
    )
    demo.add_argument("--format", choices=("auto", "table", "text", "json"), default="auto",
                      help="table on a terminal, text when piped (default: auto)")
    demo.add_argument("--write-example", metavar="DIR",
                      help="write the example filters.toml, catalog.jsonl and ctx.json to DIR "
                           "instead, to try check and explain on")
    demo.set_defaults(run=_cmd_demo)

    config_help = "the policy (filter) config file (.toml or .json)"
    message_help = ("the turn's user message, which activates keyword groups "
                    "(default: none: only 'always' groups are live)")
    focus_help = ("the focus lens's state, session:widget or session:widget:hover "
                  "(default: none: the lens does not run)")
    ctx_help = "the ctx passed to function patterns: JSON, or @FILE holding JSON (default: null)"
    servers_help = ("the servers file toolfilter serve reads: the policy judges the servers' "
                    "tools in its order, as serve does (default: the catalogs' order)")

    check = sub.add_parser(
        "check", parents=[common], help="show which tools of catalogs a config shows or hides",
        description="Applies a filter config to tool catalogs and prints every tool, visible "
                    "or hidden, with the pattern that decided. A CATALOG is an MCP tools/list "
                    "result of one server (JSON; the server id is the file name without its "
                    "extension, or SERVER=FILE, or --server-id), or a combined catalog of "
                    "{server_id, name, ...} records (a JSON array, or JSON Lines). '-' reads "
                    "standard input. Exits 1 when an --expect-* assertion fails.",
    )
    check.add_argument("--config", required=True, metavar="FILE", help=config_help)
    check.add_argument("catalogs", nargs="+", metavar="CATALOG",
                       help="a catalog file: FILE or SERVER=FILE")
    check.add_argument("--server-id", metavar="ID",
                       help="the server id of a single tools/list CATALOG")
    check.add_argument("--servers", metavar="SERVERS.json", help=servers_help)
    check.add_argument("--ctx", metavar="JSON", help=ctx_help)
    check.add_argument("--message", metavar="TEXT", help=message_help)
    check.add_argument("--focus", metavar="SESSION:WIDGET[:HOVER]", help=focus_help)
    check.add_argument("--format", choices=("auto", "table", "text", "json", "jsonl", "mcp"),
                       default="auto",
                       help="table on a terminal, tab-separated text when piped (default: auto); "
                            "mcp: the visible tools as a tools/list result")
    check.add_argument("--only", choices=("all", "visible", "hidden"), default="all",
                       help="which tools to print (default: all)")
    check.add_argument("--expect-visible", action="append", default=[], metavar="SERVER/TOOL",
                       help="fail (exit 1) unless this tool is in a catalog and visible; "
                            "repeatable")
    check.add_argument("--expect-hidden", action="append", default=[], metavar="SERVER/TOOL",
                       help="fail (exit 1) unless this tool is in a catalog and hidden; "
                            "repeatable")
    check.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                       help=f"progress bar on stderr: auto = catalogs over "
                            f"{PROGRESS_THRESHOLD:,} tools, on a terminal (default: auto)")
    check.set_defaults(run=_cmd_check)

    explain = sub.add_parser(
        "explain", parents=[common], help="explain why one tool is visible or hidden",
        description="Shows the decision for each SERVER/TOOL: the step and the pattern that "
                    "decided, every function pattern called and how it went, and the folded "
                    "forms that exclude patterns match.",
    )
    explain.add_argument("--config", required=True, metavar="FILE", help=config_help)
    explain.add_argument("tools", nargs="+", metavar="SERVER/TOOL",
                         help="the tool, split at the first '/'")
    explain.add_argument("--servers", metavar="SERVERS.json", help=servers_help)
    explain.add_argument("--ctx", metavar="JSON", help=ctx_help)
    explain.add_argument("--message", metavar="TEXT", help=message_help)
    explain.add_argument("--focus", metavar="SESSION:WIDGET[:HOVER]", help=focus_help)
    explain.add_argument("--catalog", action="append", default=[], metavar="CATALOG",
                         help="take the tool record (description, schema) from this catalog, "
                              "for function patterns that read it; repeatable")
    explain.add_argument("--format", choices=("text", "json"), default="text",
                         help="default: text")
    explain.set_defaults(run=_cmd_explain)

    lint_parser = sub.add_parser(
        "lint", parents=[common],
        help="find patterns that do nothing, and assert what stays hidden",
        description="Checks a policy against tool catalogs. Warns of static patterns that "
                    "match no tool, include patterns that match only loosely, include patterns "
                    "that include nothing (static exclude patterns hide every tool they "
                    "match), and patterns shadowed by an earlier one of the same option. "
                    "--deny-visible RULE "
                    "asserts that no tool the rule matches is visible under the whole policy "
                    "(for --ctx, --message, --focus); RULE is 'annotations: destructiveHint' "
                    "(hints, comma-separated, 'hint=false' for false), 'cel: EXPR' or a "
                    "server/tool glob. Exits 1 when an assertion fails (or, with --strict, "
                    "when there is a warning).",
    )
    lint_parser.add_argument("--config", required=True, metavar="FILE", help=config_help)
    lint_parser.add_argument("catalogs", nargs="+", metavar="CATALOG",
                             help="a catalog file: FILE or SERVER=FILE")
    lint_parser.add_argument("--server-id", metavar="ID",
                             help="the server id of a single tools/list CATALOG")
    lint_parser.add_argument("--servers", metavar="SERVERS.json", help=servers_help)
    lint_parser.add_argument("--ctx", metavar="JSON", help=ctx_help)
    lint_parser.add_argument("--message", metavar="TEXT", help=message_help)
    lint_parser.add_argument("--focus", metavar="SESSION:WIDGET[:HOVER]", help=focus_help)
    lint_parser.add_argument("--deny-visible", action="append", default=[], metavar="RULE",
                             help="fail (exit 1) if a tool RULE matches is visible; repeatable")
    lint_parser.add_argument("--strict", action="store_true",
                             help="exit 1 on warnings too")
    lint_parser.add_argument("--format", choices=("text", "json"), default="text",
                             help="default: text")
    lint_parser.set_defaults(run=_cmd_lint)

    bench = sub.add_parser(
        "bench", parents=[common], help="run the standard workload and print the ratio table",
        description="Runs the package's standard deterministic workload (generated, fixed "
                    "seeds) against its baselines (the pure-Python reference, fnmatch, a joined "
                    "re alternation, a read-only loop) in one run and prints the ratio table. "
                    "The defaults finish in well under a minute; the full run, whose "
                    "figures docs/performance.md shows, is --sizes 10000,100000,1000000 "
                    "--counts 10,100,1000,10000 --memory.",
    )
    bench.add_argument("--sizes", default="10000", metavar="N,N,...",
                       help="catalog sizes in tools (default: 10000)")
    bench.add_argument("--counts", default="10,100,1000", metavar="N,N,...",
                       help="patterns per option for the scaling rows; the largest is also "
                            "the compile row's count (default: 10,100,1000)")
    bench.add_argument("--memory", action="store_true",
                       help="also measure memory (in a subprocess; slower)")
    bench.add_argument("--format", choices=("auto", "table", "markdown", "json"),
                       default="auto",
                       help="table on a terminal, Markdown when piped (default: auto)")
    bench.add_argument("--progress", choices=("auto", "always", "never"), default="auto",
                       help="progress bar on stderr: auto = when stderr is a terminal")
    bench.set_defaults(run=_cmd_bench)
    _add_gateway_commands(sub, [common])
    return parser


def _add_gateway_commands(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    """``serve``, ``fetch``, ``export`` and ``pin``: the gateway's commands, in
    ``cli.gateway`` (FastMCP is imported only when one runs)."""
    gateway_cli.register(sub, parents)


def _prepare_streams() -> None:
    # Tool names may hold lone surrogates (JSON decoding makes them): print them
    # escaped rather than die on an encoding error.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    _prepare_streams()
    # The pinning stage's warnings (one a hidden tool) say what the command's
    # rows say: no second copy on stderr. serve's own log handler (on the
    # package's logger) still gets them.
    logging.getLogger("toolfilter_fast.pinning").addHandler(logging.NullHandler())
    try:
        return int(args.run(args))
    except (UsageError, ConfigError, CatalogError) as err:
        sys.stdout.flush()
        print(f"toolfilter {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
