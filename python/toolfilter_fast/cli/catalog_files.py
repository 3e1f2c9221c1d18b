"""Tool catalogs read from files, for the ``toolfilter`` command.

A catalog file is one of:

* an MCP ``tools/list`` result, ``{"tools": [{"name": ..., ...}, ...]}`` (or
  the whole JSON-RPC response, ``{"jsonrpc": "2.0", "result": {"tools": ...}}``)
  of one server; the server id is given, or else the file name without its
  last extension (``github.json`` is server ``github``);
* a combined catalog: a JSON array of ``{"server_id", "name", ...}`` records,
  an object ``{"tools": [...]}`` whose records carry ``server_id``, or JSON
  Lines (one record a line; ``.jsonl``/``.ndjson``, or any file holding more
  than one JSON value).

Records are MCP tool definitions (``description``, ``inputSchema`` or
``input_schema``, ``outputSchema``, ``annotations``, ``title``, ``_meta``,
``icons``, ...) and are kept whole: ``Tool.to_mcp()`` gives each back as it was
read. ``-`` reads standard input.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._tool import Tool

__all__ = ["CatalogError", "read_catalog"]


class CatalogError(ValueError):
    """A catalog file that cannot be read; the message names the file and the record."""


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
            float: "number", type(None): "null"}.get(type(value), type(value).__name__)


def _tool(where: str, record: Any, server_id: str | None) -> Tool:
    if not isinstance(record, Mapping):
        raise CatalogError(f"{where}: a tool is a JSON object, not {_type_name(record)}")
    if server_id is None:
        if "server_id" not in record:
            raise CatalogError(f"{where}: a combined-catalog record needs 'server_id'")
        server_id = record["server_id"]
    if "name" not in record:
        raise CatalogError(f"{where}: a tool needs a 'name'")
    name = record["name"]
    for key, value in (("server_id", server_id), ("name", name)):
        if not isinstance(value, str):
            raise CatalogError(f"{where}: {key!r} must be a string, not {_type_name(value)}")
    description = record.get("description")
    if description is not None and not isinstance(description, str):
        raise CatalogError(
            f"{where}: 'description' must be a string, not {_type_name(description)}",
        )
    annotations, meta = record.get("annotations"), record.get("_meta")
    title = record.get("title")
    for key, value, kind in (("annotations", annotations, Mapping), ("_meta", meta, Mapping),
                             ("title", title, str)):
        if value is not None and not isinstance(value, kind):
            raise CatalogError(f"{where}: {key!r} must be "
                               f"{'an object' if kind is Mapping else 'a string'}, "
                               f"not {_type_name(value)}")
    definition = {key: value for key, value in record.items() if key != "server_id"}
    if "input_schema" in definition and "inputSchema" not in definition:
        # Records written by hand may use the attribute's name.
        definition = {("inputSchema" if key == "input_schema" else key): value
                      for key, value in definition.items()}
    return Tool.from_mcp(server_id, definition)


def _parse(name: str, text: str) -> tuple[str, Any]:
    """``("json", value)`` or ``("jsonl", [(line_number, value), ...])``."""
    lines_format = Path(name).suffix.lower() in (".jsonl", ".ndjson")
    if not lines_format:
        try:
            return "json", json.loads(text)
        except json.JSONDecodeError as err:
            if err.msg != "Extra data":
                raise CatalogError(
                    f"{name}: invalid JSON: {err.msg} (line {err.lineno}, column {err.colno})",
                ) from None
        except RecursionError:
            raise CatalogError(f"{name}: nested too deeply") from None
    lines = [(number, line) for number, line in enumerate(text.splitlines(), start=1)
             if line.strip()]
    # Fast path: the lines as one JSON array (one parser call). It is only
    # trusted when it yields one value a line; otherwise each line is parsed on
    # its own, which also finds the line of an error.
    try:
        values = json.loads("[" + ",".join(line for _, line in lines) + "]")
    except (json.JSONDecodeError, RecursionError):
        values = None
    if isinstance(values, list) and len(values) == len(lines):
        return "jsonl", [(number, value) for (number, _), value in zip(lines, values, strict=True)]
    records = []
    for number, line in lines:
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as err:
            raise CatalogError(
                f"{name}:{number}: invalid JSON Lines record: {err.msg} (column {err.colno})",
            ) from None
        except RecursionError:
            raise CatalogError(f"{name}:{number}: nested too deeply") from None
    return "jsonl", records


def _read_text(path: str) -> str:
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except FileNotFoundError:
        raise CatalogError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CatalogError(f"{path}: is a directory, not a catalog file") from None
    except OSError as err:
        raise CatalogError(f"{path}: cannot read ({err.strerror or err})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise CatalogError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None


def read_catalog(path: str, server_id: str | None = None) -> list[Tool]:
    """The tools of one catalog file, in file order.

    ``server_id`` names the server of a ``tools/list`` result; without it the
    file name gives it. It is ignored for combined catalogs, whose records
    name their own server.
    """
    name = "<stdin>" if path == "-" else path
    shape, value = _parse(name, _read_text(path))
    if shape == "jsonl":
        return [_tool(f"{name}:{number}", record, None) for number, record in value]
    if isinstance(value, list):
        return [_tool(f"{name}: record [{i}]", record, None) for i, record in enumerate(value)]
    if not isinstance(value, dict):
        raise CatalogError(
            f"{name}: expected an MCP tools/list result or a list of records, "
            f"not {_type_name(value)}",
        )
    if "jsonrpc" in value and "tools" not in value:
        if "error" in value:
            raise CatalogError(f"{name}: a JSON-RPC error response, not a tools/list result")
        value = value.get("result")
        if not isinstance(value, dict):
            raise CatalogError(f"{name}: the JSON-RPC response has no 'result' object")
    if "tools" not in value:
        if "server_id" in value and "name" in value:
            return [_tool(name, value, None)]
        raise CatalogError(
            f"{name}: expected an MCP tools/list result (an object with a 'tools' array) "
            "or a list of {server_id, name} records",
        )
    tools = value["tools"]
    if not isinstance(tools, list):
        raise CatalogError(f"{name}: 'tools' must be an array, not {_type_name(tools)}")
    combined = any(isinstance(t, Mapping) and "server_id" in t for t in tools)
    if not combined and server_id is None:
        if path == "-":
            raise CatalogError(
                "<stdin>: a tools/list result read from stdin needs a server id "
                "(--server-id ID, or SERVER=- )",
            )
        server_id = Path(path).stem
        if not server_id:
            raise CatalogError(f"{name}: cannot take a server id from this file name")
    return [
        _tool(f"{name}: tools[{i}]", record, None if combined else server_id)
        for i, record in enumerate(tools)
    ]
