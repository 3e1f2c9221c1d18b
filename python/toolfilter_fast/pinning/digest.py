"""What a tool's pin is made of: the five fields of its definition that a
model reads or a call depends on, in one canonical JSON text, and its sha256.

The canonical text is ``json.dumps`` of an object with exactly the keys of
:data:`PINNED_FIELDS` (a field the tool lacks is ``null``), keys sorted at
every level, no whitespace, every character past ASCII escaped (so a lone
surrogate has one spelling, ``\\udXXX``), and no NaN or infinity (JSON has
none: a definition holding one has no canonical text). The digest is
``"sha256:"`` and the hex digest of that text's bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["PINNED_FIELDS", "DigestError", "canonical", "definition_of", "digest_of",
           "tool_digest"]

#: The wire names of the fields a pin covers, and the attribute of a
#: :class:`~toolfilter_fast.Tool` each is read from.
PINNED_FIELDS = (
    ("name", "name"), ("description", "description"), ("inputSchema", "input_schema"),
    ("outputSchema", "output_schema"), ("annotations", "annotations"),
)


class DigestError(ValueError):
    """A definition that has no canonical JSON text (a value JSON cannot hold)."""


def definition_of(tool: Any) -> dict[str, Any]:
    """The pinned fields of ``tool`` (a Tool, or an object with its attributes)
    under their wire names; a field it lacks is None."""
    return {wire: getattr(tool, attribute, None) for wire, attribute in PINNED_FIELDS}


def _plain(value: Any, where: str) -> Any:
    """``value`` as plain JSON data (dicts, lists, str, int, float, bool, None),
    a mapping's keys checked to be str; a DigestError naming ``where`` else."""
    # The exact JSON types first (what a server's definition holds): no copy.
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        for key in value:
            if type(key) is not str:
                break
        else:
            return {key: _plain(item, where) for key, item in value.items()}
    if kind is list:
        return [_plain(item, where) for item in value]
    # A subclass of str, int or float is read by its base type's own slot:
    # its overridden __str__ or __eq__ never chooses the text.
    if value is None or isinstance(value, bool):
        return None if value is None else value is True
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        number = float.__float__(value)
        if not math.isfinite(number):
            raise DigestError(f"{where} holds {number!r}, which JSON cannot hold")
        return number
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise DigestError(f"{where} has a key that is not a string: {key!r}")
            out[str.__str__(key)] = _plain(item, f"{where}.{str.__str__(key)}")
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise DigestError(f"{where} is a {type(value).__name__}, which JSON cannot hold")


def canonical(definition: Mapping[str, Any]) -> str:
    """The canonical JSON text of a definition's pinned fields (see the module)."""
    try:
        fields = {wire: _plain(definition.get(wire), wire) for wire, _ in PINNED_FIELDS}
    except RecursionError:
        raise DigestError("the definition is nested too deeply") from None
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def digest_of(definition: Mapping[str, Any]) -> str:
    """``"sha256:<hex>"`` of :func:`canonical`."""
    return "sha256:" + hashlib.sha256(canonical(definition).encode("ascii")).hexdigest()


def tool_digest(tool: Any) -> str:
    """The digest of a tool's pinned fields (:func:`definition_of`)."""
    return digest_of(definition_of(tool))
