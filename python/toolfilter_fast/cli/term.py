"""Terminal output for the ``toolfilter`` command: colours, tables, a progress bar.

No dependency: ANSI codes when the stream is a terminal and ``NO_COLOR`` is
unset or empty (https://no-color.org), plain text otherwise. Tables and the
progress bar keep to the terminal's width (``COLUMNS`` when it is set), so a
long reason wraps inside its column instead of wrapping the whole row.
docs/architecture.md says why this is not built on a terminal library.
"""

from __future__ import annotations

import os
import sys
import time
import unicodedata
from collections.abc import Sequence
from typing import TextIO

__all__ = ["ProgressBar", "Style", "table", "terminal_width", "text_width", "wants_color"]

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


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The width to keep output to: ``COLUMNS`` when set to a positive number, else
    the width of ``stream`` (standard output by default) when it is a terminal
    that reports one; ``None`` (no limit) otherwise, as for a pipe."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = sys.stdout if stream is None else stream
    try:
        if not stream.isatty():
            return None
        width = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return None
    return width if width > 0 else None  # a new pseudo-terminal reports 0


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def text_width(text: str) -> int:
    """Columns ``text`` takes on a terminal (wide East Asian characters count 2,
    combining marks 0; ANSI codes are not expected here)."""
    return sum(map(_char_width, text))


def _cut(text: str, width: int) -> tuple[str, str]:
    """The longest head of ``text`` that fits in ``width`` columns (at least one
    character, so that wrapping always moves on), and the rest."""
    used = 0
    for i, ch in enumerate(text):
        used += _char_width(ch)
        if used > width and i > 0:
            return text[:i], text[i:]
    return text, ""


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken at spaces where it can
    be and inside a word only where the word alone is too wide."""
    if text_width(text) <= width:
        return [text]
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        candidate = f"{current} {word}" if current else word
        if text_width(candidate) <= width:
            current = candidate
            continue
        if current:
            lines.append(current)
        while text_width(word) > width:
            head, word = _cut(word, width)
            lines.append(head)
        current = word
    lines.append(current)
    return lines


def _fit(widths: list[int], limit: int, gap: int) -> list[int]:
    """Column widths that fit in ``limit``: the widest columns give way first, down
    to a common cap, and what the cap leaves over goes back to them in order."""
    room = limit - gap * (len(widths) - 1)
    if sum(widths) <= room:
        return widths
    low, high = 1, max(widths)
    while low < high:  # the largest cap whose columns still fit
        cap = (low + high + 1) // 2
        if sum(min(w, cap) for w in widths) <= room:
            low = cap
        else:
            high = cap - 1
    fitted = [min(w, low) for w in widths]
    spare = room - sum(fitted)
    for i, w in enumerate(widths):
        if spare <= 0:
            break
        give = min(w - fitted[i], spare)
        fitted[i] += give
        spare -= give
    return fitted


def table(
    header: Sequence[str], rows: Sequence[Sequence[tuple[str, tuple[str, ...]]]], style: Style,
    width: int | None = None,
) -> list[str]:
    """Aligned columns; each cell is ``(text, styles)``. The last column is not padded.

    The table keeps to ``width`` columns (default: :func:`terminal_width`, no
    limit on a pipe): when its rows are wider, the widest columns are narrowed
    and their cells wrap onto more lines. At least three columns per table
    column are needed; below that, lines stay as narrow as they can.
    """
    gap = 2
    widths = [text_width(h) for h in header]
    for row in rows:
        for i, (text, _) in enumerate(row):
            widths[i] = max(widths[i], text_width(text))
    limit = terminal_width() if width is None else width
    if limit is not None:
        widths = _fit(widths, limit, gap)

    def lines_of(cells: Sequence[tuple[str, tuple[str, ...]]]) -> list[str]:
        pieces = [_wrap(text, widths[i]) for i, (text, _) in enumerate(cells)]
        out = []
        for n in range(max(map(len, pieces), default=1)):
            parts = []
            for i, (_, styles) in enumerate(cells):
                text = pieces[i][n] if n < len(pieces[i]) else ""
                pad = "" if i == len(cells) - 1 else " " * (widths[i] - text_width(text))
                parts.append((style(text, *styles) if text else "") + pad)
            out.append((" " * gap).join(parts).rstrip())
        return out

    lines = lines_of([(h, ("bold",)) for h in header])
    for row in rows:
        lines.extend(lines_of(row))
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
        limit = terminal_width(self.stream)
        if limit is not None and text_width(line) >= limit:
            # One column short of the edge: a line that wraps could not be
            # redrawn from its start with a carriage return.
            line = _cut(line, max(limit - 1, 1))[0]
        # Clear to the end of the line: a shorter message must not leave a tail.
        self.stream.write(f"\r{line}\x1b[K")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            if self._drawn != (self.done, self.message):
                self._draw()
            self.stream.write("\n")
            self.stream.flush()
