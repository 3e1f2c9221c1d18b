"""The pinning stage spelled out: each tool's five pinned fields written as
sorted, compact, ASCII-only JSON, hashed with sha256, and compared with its
lock entry's digest. Written apart from ``toolfilter_fast.pinning`` (which it
shares only the lock file's reader with): the oracle of its tests.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from .text import text_of

__all__ = ["pin_hides"]

_FIELDS = {"name": "name", "description": "description", "inputSchema": "input_schema",
           "outputSchema": "output_schema", "annotations": "annotations"}


class _NoJson(Exception):
    pass


def _json_value(value: Any) -> Any:
    if value is None or value is True or value is False:
        return value
    if isinstance(value, str):
        return "".join(str.__getitem__(value, i) for i in range(str.__len__(value)))
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        if not math.isfinite(float.__float__(value)):
            raise _NoJson
        return float.__float__(value)
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if hasattr(value, "keys") and hasattr(value, "__getitem__"):
        out = {}
        for key in value.keys():
            if not isinstance(key, str):
                raise _NoJson
            out[_json_value(key)] = _json_value(value[key])
        return out
    raise _NoJson


def _digest(record: dict[str, Any], fields: Any) -> str | None:
    """The digest of ``record`` (wire name -> value) with only ``fields`` kept."""
    try:
        kept = {wire: _json_value(record.get(wire)) if wire in fields else None
                for wire in _FIELDS}
    except (_NoJson, RecursionError):
        return None
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def pin_hides(pinning: Any, tool: Any) -> bool:
    """Whether the pinning options ``pinning`` (its ``lock``, ``on_new`` and
    ``on_changed``) hide ``tool``."""
    for what in ("server_id", "name"):
        if not isinstance(getattr(tool, what), str):
            raise TypeError(f"{what} must be str")
    server, name = text_of(tool.server_id), text_of(tool.name)
    fields = pinning.fields
    digest = _digest({wire: getattr(tool, attribute, None)
                      for wire, attribute in _FIELDS.items()}, fields)
    if digest is None:
        return True
    entry = None
    for pinned in pinning.lock:
        if text_of(pinned.server) == server and text_of(pinned.name) == name:
            entry = pinned
    if entry is None:
        return bool(pinning.on_new == "hide")
    return bool(_digest(dict(entry.definition), fields) != digest
                and pinning.on_changed == "hide")
