"""Exceptions shared by the fast path and the reference."""

from __future__ import annotations

from typing import Any

__all__ = ["PatternError", "ToolNotFoundError"]


class PatternError(ValueError):
    """A pattern or option given to ``compile`` was refused.

    ``option``, ``index`` and ``entry`` say where, as a user would point at it:
    ``exclude[2]`` and the entry's ``repr``. ``index`` and ``entry`` are None for
    errors about a whole option.
    """

    def __init__(
        self, message: str, *, option: str | None = None, index: int | None = None,
        entry: Any = None,
    ) -> None:
        super().__init__(message)
        self.option = option
        self.index = index
        self.entry = entry


class ToolNotFoundError(LookupError):
    """No visible tool by that name: raised alike for hidden and missing tools.

    The type and message shape are the same in both cases, so a hidden tool
    cannot be discovered by guessing its name.
    """

    kind = "not_found"

    def __init__(self, server_id: object, name: object) -> None:
        super().__init__(f"tool not found: {name!r} on server {server_id!r}")
        self.server_id = server_id
        self.name = name
