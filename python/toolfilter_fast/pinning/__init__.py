"""Tool-definition pinning: a defence against a server that changes a tool
after it was reviewed (a rug pull, a poisoned description).

* ``digest``: the canonical JSON of a tool's pinned fields and its sha256;
* ``lock``: the lock file (:class:`ToolLock`, version 1) and :func:`diff`;
* ``stage``: :class:`Pinning`, the Policy's ``pinning`` stage.

``toolfilter pin`` writes a lock from live servers, ``toolfilter pin --diff``
shows what changed since; a policy's ``[pinning]`` section names the lock.
"""

from __future__ import annotations

from .digest import PINNED_FIELDS, DigestError, canonical, digest_of, tool_digest
from .lock import LOCK_VERSION, Change, LockError, PinnedTool, ToolLock, diff, render
from .stage import ACTIONS, Pinning

__all__ = ["ACTIONS", "LOCK_VERSION", "PINNED_FIELDS", "Change", "DigestError", "LockError",
           "PinnedTool", "Pinning", "ToolLock", "canonical", "diff", "digest_of", "render",
           "tool_digest"]
