"""Tool hints as an MCP server sent them, read through the MCP SDK's client.

The MCP SDK's client (``mcp.ClientSession``, either generation) validates a
``tools/list`` result into its pydantic models, and those coerce:
``{"destructiveHint": "false"}`` becomes ``False``, ``{"readOnlyHint": 1}``
becomes ``True``. toolfilter_fast believes a hint only when it is a real JSON
boolean; a missing hint, or any other value, takes the MCP default (docs/policy.md,
"Annotation patterns"). A tool read through the SDK would then be judged by hints
that a :class:`~toolfilter_fast.Tool` made from the same JSON does not have: a
server that sends ``"false"`` would pass for non-destructive.

Inside ``with hints_as_sent():``, every ``tools/list`` result an SDK
``ClientSession`` receives has its hints read as sent: before the SDK's models
see the result, a hint of a tool's ``annotations`` (``readOnlyHint``,
``destructiveHint``, ``idempotentHint``, ``openWorldHint``) whose value is not a
JSON boolean (nor null) is taken out. The SDK's tool then has no such hint, so
whatever reads it downstream (a Policy, a framework's tool, the gateway's own
listing, a catalog file) applies the MCP default, as the library does. Nothing
else of the result changes. The gateway (its upstreams' listings), ``toolfilter
fetch`` and the client-side adapters list inside such a block; code that lists
through a framework's per-tool hook can put its run inside one.

How: the first block wraps ``ClientSession.send_request``, once for the
process, so that a ``tools/list`` request sent inside a block validates its
result with the hints as sent; outside every block the wrapper passes the
request on unchanged (it reads one context variable). The block is a context
variable: it holds in the tasks its code starts and in a coroutine its code
hands to another thread's event loop (``asyncio.run_coroutine_threadsafe``),
not in a thread its code starts.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from ._tool import HINTS

__all__ = ["hints_as_sent", "loose_hints", "strict_annotations", "strict_listing"]

_AS_SENT: ContextVar[bool] = ContextVar("toolfilter_fast_hints_as_sent", default=False)
_INSTALL = threading.Lock()
#: The attribute that marks the SDK's ``send_request`` as wrapped here.
_MARK = "_toolfilter_fast_hints_as_sent"


def loose_hints(annotations: Any) -> list[str]:
    """The hints of a tool's ``annotations`` (a mapping, as sent) whose value is
    neither a JSON boolean nor null, in :data:`~toolfilter_fast._tool.HINTS`
    order; empty for anything that is not a mapping."""
    if not isinstance(annotations, Mapping):
        return []
    return [key for key in HINTS
            if key in annotations and annotations[key] is not None
            and not isinstance(annotations[key], bool)]


def strict_annotations(annotations: Any) -> Any:
    """``annotations`` without the hints :func:`loose_hints` names (a new dict,
    the other keys in their order); anything else, or a mapping without such a
    hint, unchanged."""
    loose = loose_hints(annotations)
    if not loose:
        return annotations
    return {key: value for key, value in annotations.items() if key not in loose}


def strict_listing(result: Any) -> Any:
    """A ``tools/list`` result as sent (a mapping) with every tool's annotations
    :func:`strict_annotations`: a shallow copy where a tool changed, the result
    itself where none did (or where it is not the expected shape, left for the
    SDK to refuse)."""
    if not isinstance(result, Mapping) or not isinstance(result.get("tools"), list):
        return result
    tools = result["tools"]
    strict = []
    for tool in tools:
        if isinstance(tool, Mapping) and loose_hints(tool.get("annotations")):
            tool = {**tool, "annotations": strict_annotations(tool["annotations"])}
        strict.append(tool)
    if all(new is old for new, old in zip(strict, tools, strict=True)):
        return result
    return {**result, "tools": strict}


class _AsSent:
    """Stands for the SDK's ``ListToolsResult`` where ``send_request`` validates
    the result (``result_type.model_validate(raw, ...)`` in both generations):
    the same validation, of the result with its hints as sent."""

    __slots__ = ("_result_type",)

    def __init__(self, result_type: Any) -> None:
        self._result_type = result_type

    def model_validate(self, raw: Any, *args: Any, **kwargs: Any) -> Any:
        return self._result_type.model_validate(strict_listing(raw), *args, **kwargs)


def _install() -> None:
    """Wraps ``ClientSession.send_request``, once; nothing without the SDK."""
    try:
        from mcp import types
        from mcp.client.session import ClientSession
    except ImportError:  # pragma: no cover - no SDK, so no listing is read through it
        return
    with _INSTALL:
        original = ClientSession.send_request
        if getattr(original, _MARK, False):
            return
        listing = types.ListToolsResult

        @functools.wraps(original)
        async def send_request(self: Any, request: Any, result_type: Any, *args: Any,
                               **kwargs: Any) -> Any:
            if result_type is listing and _AS_SENT.get():
                result_type = _AsSent(result_type)
            return await original(self, request, result_type, *args, **kwargs)

        setattr(send_request, _MARK, True)
        ClientSession.send_request = send_request  # type: ignore[method-assign]


@contextlib.contextmanager
def hints_as_sent() -> Iterator[None]:
    """A block inside which the MCP SDK's client reads every ``tools/list``
    result's hints as sent (see the module's docs): a hint that is not a JSON
    boolean is left out of the SDK's tool, so it takes the MCP default. Blocks
    nest. Without the MCP SDK installed it does nothing."""
    _install()
    token = _AS_SENT.set(True)
    try:
        yield
    finally:
        _AS_SENT.reset(token)
