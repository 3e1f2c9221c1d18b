"""Terminal output for the ``toolfilter`` command: colours, tables, a progress bar.

No dependency: ANSI codes when the stream is a terminal and ``NO_COLOR`` is
unset or empty (https://no-color.org), plain text otherwise.
"""

from __future__ import annotations

import os
import time
import unicodedata
from collections.abc import Sequence
from typing import TextIO

__all__ = ["ProgressBar", "Style", "table", "text_width", "wants_color"]

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def wants_color(stream: TextIO, choice: str = "auto") -> bool:
    """``always``/``never``, or for ``auto``: a terminal and no ``NO_COLOR``."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Style:
    """Wraps text in ANSI codes, or leaves it alone when colour is off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


def text_width(text: str) -> int:
    """Columns ``text`` takes on a terminal (wide East Asian characters count 2,
    combining marks 0; ANSI codes are not expected here)."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def table(
    header: Sequence[str], rows: Sequence[Sequence[tuple[str, tuple[str, ...]]]], style: Style,
) -> list[str]:
    """Aligned columns; each cell is ``(text, styles)``. The last column is not padded."""
    widths = [text_width(h) for h in header]
    for row in rows:
        for i, (text, _) in enumerate(row):
            widths[i] = max(widths[i], text_width(text))

    def line(cells: Sequence[tuple[str, tuple[str, ...]]]) -> str:
        out = []
        for i, (text, styles) in enumerate(cells):
            pad = "" if i == len(cells) - 1 else " " * (widths[i] - text_width(text))
            out.append(style(text, *styles) + pad)
        return "  ".join(out).rstrip()

    lines = [line([(h, ("bold",)) for h in header])]
    lines.extend(line(row) for row in rows)
    return lines


class ProgressBar:
    """A one-line bar on a terminal stream, redrawn at most ten times a second."""

    def __init__(self, stream: TextIO, total: int, label: str, enabled: bool) -> None:
        self.stream = stream
        self.total = max(total, 1)
        self.label = label
        self.enabled = enabled
        self.done = 0
        self.message = ""
        self._last = 0.0
        self._drawn: tuple[int, str] | None = None

    def advance(self, count: int = 1, message: str | None = None) -> None:
        self.done += count
        if message is not None:
            self.message = message
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last >= 0.1 or self.done >= self.total:
            self._last = now
            self._draw()

    def _draw(self) -> None:
        self._drawn = (self.done, self.message)
        fraction = min(self.done / self.total, 1.0)
        width = 30
        filled = int(fraction * width)
        bar = "#" * filled + "-" * (width - filled)
        line = f"{self.label} [{bar}] {fraction:4.0%} {self.done:,}/{self.total:,}"
        if self.message:
            line += f" {self.message}"
        # Clear to the end of the line: a shorter message must not leave a tail.
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            if self._drawn != (self.done, self.message):
                self._draw()
            self.stream.write("\n")
            self.stream.flush()
