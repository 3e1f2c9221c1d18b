"""``toolfilter pin``: the tools of live servers pinned in a lock file, and
``toolfilter pin --diff``: what changed since, for review.

Each server is started and listed exactly as the gateway starts and lists it
(an :class:`~toolfilter_fast.gateway.upstream.Upstream`, the tool read into
the record the gateway's policy judges), so a lock written here holds the
digests the gateway computes. Servers are listed one after the other, each
within its timeout, and closed, their processes ended.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from .._tool import Tool
from .provider import _record
from .servers import ServerSpec, command_error
from .upstream import Upstream

__all__ = ["list_servers"]


async def _list_one(spec: ServerSpec, timeout: float) -> tuple[list[Tool], str | None]:
    unusable = command_error(spec)
    if unusable is not None:
        return [], unusable
    upstream = Upstream(spec, start_timeout=timeout, list_timeout=timeout)
    try:
        await upstream.start()
        if upstream.down is not None:
            return [], upstream.down
        listed = await upstream.listing("tools")
        if upstream.down is not None or upstream.slow:
            return [], upstream.down or f"it did not answer tools/list within {timeout:g} s"
        tools = []
        for component in listed:
            try:
                tools.append(_record(spec.name, component.name, component))
            except (TypeError, ValueError) as err:
                return [], f"tool {component.name!r} cannot be read: {err}"
        return tools, None
    finally:
        with contextlib.suppress(Exception):  # closing must not hide the listing's outcome
            await upstream.close()


def list_servers(servers: Sequence[ServerSpec], timeout: float
                 ) -> tuple[list[Tool], list[tuple[str, str]]]:
    """Every server's tools (in the servers file's order) and the servers that
    failed, each with why."""

    async def main() -> tuple[list[Tool], list[tuple[str, str]]]:
        tools: list[Tool] = []
        failed: list[tuple[str, str]] = []
        for spec in servers:
            found, error = await _list_one(spec, timeout)
            if error is not None:
                failed.append((spec.name, error))
            tools.extend(found)
        return tools, failed

    return asyncio.run(main())
