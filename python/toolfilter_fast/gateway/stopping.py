"""The gateway's stop signals, caught from the first moment of ``toolfilter
serve`` (this module imports nothing heavy, so it is installed before FastMCP
is even imported)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from typing import Any

__all__ = ["Stopper"]


class Stopper:
    """SIGINT and SIGTERM, from the moment :meth:`install` runs (before
    anything starts) to the end: before the loop runs a signal is noted and
    nothing starts; while the upstreams start, the start is cancelled; while
    serving, HTTP stops gracefully (a second signal forces it) and stdio ends
    at once (its reader thread cannot be interrupted). Every way out closes the
    upstreams, ending their processes."""

    def __init__(self) -> None:
        self.signal: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_signal: Callable[[str, bool], None] | None = None

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, _frame: Any) -> None:
        name = signal.Signals(signum).name
        first = self.signal is None
        if first:
            self.signal = name
        loop, act = self._loop, self._on_signal
        if loop is not None and act is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(act, name, first)

    def attach(self, loop: asyncio.AbstractEventLoop, act: Callable[[str, bool], None]) -> None:
        self._loop, self._on_signal = loop, act
        if self.signal is not None:
            loop.call_soon(act, self.signal, True)
