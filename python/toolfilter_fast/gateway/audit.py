"""The gateway's audit log: one JSON object a line, for the operator's tools.

Each line has ``time`` (UTC, ISO 8601 with milliseconds), ``event`` and the
event's fields:

* ``refused``: a request refused with HTTP 401: ``client`` (its address) and
  ``why`` (no bearer token, or the token was refused);
* ``hidden``: a call (``tools/call``, ``prompts/get``, ``resources/read``) of
  a component the policy hides: ``who`` (the caller's ``client_id``, the name
  the token file or the JWT gives it), ``request``, ``name`` (the gateway's
  name), ``server``, ``stage`` and ``policy`` (the policy's digest);
* ``would_hide``: the same, in audit mode, for a call the policy would have
  refused and that went through; and for a listing, ``items``: each
  ``{"name", "stage"}`` the listing would have left out;
* ``reload``: ``ok``, ``why``, ``old`` and ``new`` (the digests), or
  ``error`` (why the file did not load, the old policy staying);
* ``upstream``: ``server``, ``state`` (``up``, ``down`` or ``slow``) and
  ``why``.

Never a request's arguments, a token, or a header's value. The policy's digest
is ``sha256:`` and the hex sha256 of the policy file's bytes, then, when it
pins tools, of its lock file's: two gateways with the same digest judge alike.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import IO, Any

__all__ = ["AuditLog", "policy_digest"]


def policy_digest(paths: Iterable[str | os.PathLike[str]]) -> str:
    """The digest of the files' bytes, in order (a file that cannot be read
    counts as empty)."""
    digest = hashlib.sha256()
    for path in paths:
        try:
            with open(path, "rb") as file:
                data = file.read()
        except OSError:
            data = b""
        digest.update(hashlib.sha256(data).digest())
    return "sha256:" + digest.hexdigest()


def who(ctx: Any) -> str | None:
    """The caller's name for the log: ctx's ``client_id``, never its token."""
    client = ctx.get("client_id") if isinstance(ctx, Mapping) else None
    return client if isinstance(client, str) else None


class AuditLog:
    """Writes audit events to a text stream, one JSON line each, whole lines
    from any thread. ``mode`` is ``--mode`` (None: the policy's own)."""

    def __init__(self, stream: IO[str] | None, *, mode: str | None = None) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.mode = mode

    @classmethod
    def open(cls, target: str | None, *, mode: str | None = None) -> AuditLog:
        """``target`` a file (appended to), ``-`` (stderr) or None (no log)."""
        if target is None:
            return cls(None, mode=mode)
        if target == "-":
            return cls(sys.stderr, mode=mode)
        return cls(open(target, "a", encoding="utf-8", buffering=1), mode=mode)

    @property
    def enabled(self) -> bool:
        return self._stream is not None

    def mode_of(self, policy: Any) -> str:
        """The mode in force: ``--mode``, else the policy's ``[policy] mode``."""
        if self.mode is not None:
            return self.mode
        return "audit" if getattr(policy, "mode", "enforce") == "audit" else "enforce"

    def event(self, event: str, **fields: Any) -> None:
        if self._stream is None:
            return
        now = datetime.datetime.now(datetime.timezone.utc)
        record = {"time": now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                  "event": event, **fields}
        line = json.dumps(record, ensure_ascii=True, default=str) + "\n"
        with self._lock:
            try:
                self._stream.write(line)
                self._stream.flush()
            except (OSError, ValueError):  # a closed or full log never fails a request
                pass

    def close(self) -> None:
        stream = self._stream
        if stream is not None and stream is not sys.stderr:
            stream.close()
        self._stream = None
