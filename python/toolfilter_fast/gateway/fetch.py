"""``toolfilter fetch``: each live server's ``tools/list`` result written as a
catalog file, ``DIR/SERVER.json``, which ``check``, ``explain``, ``lint`` and
``export`` read (the file name gives the server id).

Each server is connected with FastMCP's ``Client`` on the transport its entry
describes (the same one the gateway uses), listed (every page), and
disconnected, its process ended. A server that fails (its command does not
exist, it does not start, it answers an error) is reported on its own line and
the others go on; a stdio server's stderr is logged line by line with its name,
as the gateway logs it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastmcp import Client

from ..sdk_hints import hints_as_sent
from .servers import ServerSpec, command_error
from .upstream import StderrRelay, _transport, _why

__all__ = ["Fetched", "fetch_all"]


@dataclass(frozen=True)
class Fetched:
    """One server's outcome: the file written and its tool count, or the error."""

    server: str
    path: Path | None
    tools: int
    error: str | None = None


def _definition(tool: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    return dumped


async def _fetch(spec: ServerSpec, directory: Path, timeout: float) -> Fetched:
    unusable = command_error(spec)
    if unusable is not None:
        return Fetched(spec.name, None, 0, unusable)
    relay = StderrRelay(spec.name) if spec.kind == "stdio" else None
    try:
        client = Client(_transport(spec, relay.file if relay else None), init_timeout=timeout,
                        timeout=timeout)
        # Hints as the server sent them: one that is no JSON boolean is left out.
        async with client:
            with hints_as_sent():
                tools = await client.list_tools()
        await client.transport.close()  # type: ignore[no-untyped-call]
    except Exception as err:
        return Fetched(spec.name, None, 0, _why(err))
    path = directory / f"{spec.name}.json"
    doc = {"tools": [_definition(tool) for tool in tools]}
    try:
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    except OSError as err:
        return Fetched(spec.name, None, 0, f"cannot write {path}: {err.strerror or err}")
    return Fetched(spec.name, path, len(tools))


def fetch_all(servers: Sequence[ServerSpec], directory: Path, *, timeout: float = 30.0,
              report: Callable[[Fetched], None] = lambda _: None) -> list[Fetched]:
    """Fetches every server, one after the other (so the progress lines come in
    the file's order), calling ``report`` as each one ends."""

    async def main() -> list[Fetched]:
        out = []
        for spec in servers:
            fetched = await _fetch(spec, directory, timeout)
            report(fetched)
            out.append(fetched)
        return out

    return asyncio.run(main())
