"""What every ``toolfilter`` command reads alike: ``--ctx``, the CATALOG
arguments, and :class:`UsageError`, a bad argument found after parsing
(``main`` reports it as one line, exit 2). ``command`` (``check``,
``explain``, ``lint``) and ``gateway`` (``serve``, ``fetch``, ``export``,
``pin``) both take them from here."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._tool import Tool
from .catalog_files import read_catalog

__all__ = ["UsageError", "catalog_args", "parse_ctx", "read_catalogs"]


class UsageError(Exception):
    """A bad argument found after parsing: reported like argparse's own, exit 2."""


def parse_ctx(text: str | None) -> Any:
    """``--ctx``: JSON text, or ``@FILE`` holding JSON."""
    if text is None:
        return None
    where = "--ctx"
    if text.startswith("@"):
        path = text[1:]
        where = f"--ctx {text}"
        try:
            text = Path(path).read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise UsageError(f"{where}: no such file") from None
        except (OSError, UnicodeDecodeError) as err:
            raise UsageError(f"{where}: cannot read ({err})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{where}: invalid JSON: {err.msg} (column {err.colno})") from None


def catalog_args(args: Sequence[str], server_id: str | None) -> list[tuple[str, str | None]]:
    """``(path, server_id)`` for each CATALOG argument (``SERVER=PATH`` or ``PATH``)."""
    if server_id is not None and len(args) > 1:
        raise UsageError(
            "--server-id names the server of a single catalog; with several, "
            "write each as SERVER=FILE",
        )
    out: list[tuple[str, str | None]] = []
    for arg in args:
        server, equals, path = arg.partition("=")
        if equals and arg != "-" and not Path(arg).exists():
            if not server or not path:
                raise UsageError(f"catalog {arg!r}: expected FILE or SERVER=FILE")
            out.append((path, server))
        else:
            out.append((arg, server_id))
    return out


def read_catalogs(args: Sequence[str], server_id: str | None) -> list[Tool]:
    """The tools of every CATALOG argument, in order."""
    tools: list[Tool] = []
    for path, server in catalog_args(args, server_id):
        tools.extend(read_catalog(path, server))
    return tools
