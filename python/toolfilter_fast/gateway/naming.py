"""How the gateway names what it shows: ``--names prefixed|bare`` and the
policy's ``[[rename]]``.

* ``prefixed`` (the default): a tool or prompt ``t`` of server ``s`` is
  ``s__t``, a resource URI or template ``scheme://rest`` is
  ``scheme://s/rest``, so two servers never give one name;
* ``bare``: the server's own name and URI, as MCP Apps' UI code calls its
  tools; two servers that list one name collide (the gateway refuses to
  start on a tool that does, and a later listing that brings one shows
  neither, with a warning).

A tool's ``[[rename]]`` replaces its own name before that (``github`` /
``create_issue`` renamed ``new_issue``: ``github__new_issue``, or
``new_issue`` bare) and may replace its description. The policy never sees
any of this: it judges each component by the server's own name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..renames import Renames
from .servers import flat_name

__all__ = ["MODES", "Naming", "flat_uri"]

#: The values of ``--names``.
MODES = ("prefixed", "bare")

#: ``scheme://rest``: a URI the gateway can name ``scheme://SERVER/rest``.
URI = re.compile(r"([^:/]+://)(.*)", re.DOTALL)


def flat_uri(server_id: str, uri: str) -> str | None:
    """The gateway's prefixed URI of a resource (or template) ``uri`` of
    ``server_id``: ``scheme://SERVER/rest``, as FastMCP's ``Namespace`` writes
    it; None when ``uri`` is not ``scheme://rest``."""
    found = URI.fullmatch(uri)
    return None if found is None else f"{found[1]}{server_id}/{found[2]}"


@dataclass(frozen=True)
class Naming:
    """The names and descriptions the gateway shows, for one policy."""

    mode: str = "prefixed"
    renames: Renames = field(default_factory=Renames)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"names must be one of {', '.join(MODES)}, not {self.mode!r}")

    def name(self, kind: str, server: str, name: str) -> str | None:
        """The gateway's name of component ``name`` (a URI for resources and
        templates) of ``server``; None when it cannot be named so."""
        if kind == "tools":
            name = self.renames.name(server, name)
        if self.mode == "bare":
            return name
        if kind in ("tools", "prompts"):
            return flat_name(server, name)
        return flat_uri(server, name)

    def description(self, server: str, tool: str, description: str | None) -> str | None:
        """The description shown for a tool, given the server's own."""
        return self.renames.description(server, tool, description)

    def rename_clashes(self) -> list[str]:
        """Renames that give two tools one name in this mode (two servers'
        renames to one name, bare), each as one sentence."""
        if self.mode != "bare":
            return []
        return [f"[[rename]] gives {one.server}/{one.tool} and {other.server}/{other.tool} the "
                f"one name {one.name!r}, which --names bare cannot tell apart"
                for one, other in self.renames.clashes_across_servers()]
